//! Dates, times and timestamps written as text (ISO 8601), read into nanoseconds. The grammar
//! is read here (chrono's parsers take a fixed format, not ISO 8601's optional parts); dates and
//! times are checked and counted by chrono.

use chrono::{Datelike, NaiveDate, NaiveTime, Timelike};

/// Nanoseconds in a day.
pub const NANOS_PER_DAY: i128 = 86_400_000_000_000;

/// 1970-01-01 in days from 0001-01-01 (day 1), as chrono counts them.
const UNIX_EPOCH_DAYS_FROM_CE: i64 = 719_163;

/// Days from 1970-01-01 to the proleptic Gregorian date `y-m-d`, or `None` if there is no such
/// date (chrono's calendar: month lengths and leap years).
fn days_from_civil(y: i64, m: u32, d: u32) -> Option<i64> {
    let date = NaiveDate::from_ymd_opt(i32::try_from(y).ok()?, m, d)?;
    Some(date.num_days_from_ce() as i64 - UNIX_EPOCH_DAYS_FROM_CE)
}

/// Exactly `n` ASCII digits at the start of `s`, and the rest.
fn digits(s: &str, n: usize) -> Option<(u32, &str)> {
    let head = s.get(..n)?;
    if !head.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((head.parse().ok()?, &s[n..]))
}

/// `HH:MM[:SS[.f{1,9}]]` at the start of `s`: nanoseconds since midnight, and the rest.
fn time_of_day(s: &str) -> Option<(i64, &str)> {
    let (h, s) = digits(s, 2)?;
    let (m, mut s) = digits(s.strip_prefix(':')?, 2)?;
    let mut sec = 0;
    let mut frac = 0i64;
    if let Some(rest) = s.strip_prefix(':') {
        let (v, rest) = digits(rest, 2)?;
        sec = v;
        s = rest;
        if let Some(rest) = s.strip_prefix('.').or_else(|| s.strip_prefix(',')) {
            let n = rest.bytes().take_while(u8::is_ascii_digit).count();
            if n == 0 || n > 9 {
                return None;
            }
            frac = rest[..n].parse::<i64>().ok()? * 10i64.pow(9 - n as u32);
            s = &rest[n..];
        }
    }
    let t = NaiveTime::from_hms_nano_opt(h, m, sec, u32::try_from(frac).ok()?)?;
    Some((
        t.num_seconds_from_midnight() as i64 * 1_000_000_000 + t.nanosecond() as i64,
        s,
    ))
}

/// An ISO 8601 date or date and time: `[+-]YYYY-MM-DD`, then optionally `T` (or a space) and
/// `HH:MM[:SS[.fffffffff]]`, then optionally a zone (`Z`, `+HH:MM`, `+HHMM`, `+HH`); without a
/// zone the time is taken as UTC, as timestamps without a time zone are stored. Nanoseconds since
/// 1970-01-01T00:00:00Z, or `None` if `s` is not such a text.
pub fn parse_instant(s: &str) -> Option<i128> {
    let (negative, body) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let year_len = body.bytes().take_while(u8::is_ascii_digit).count();
    if year_len < 4 {
        return None;
    }
    let year: i64 = body[..year_len].parse().ok()?;
    let year = if negative { -year } else { year };
    let (month, rest) = digits(body[year_len..].strip_prefix('-')?, 2)?;
    let (day, rest) = digits(rest.strip_prefix('-')?, 2)?;
    let days = days_from_civil(year, month, day)? as i128;
    let mut rest = rest;
    let mut nanos = 0i128;
    if let Some(t) = rest
        .strip_prefix('T')
        .or_else(|| rest.strip_prefix('t'))
        .or_else(|| rest.strip_prefix(' '))
    {
        let (n, after) = time_of_day(t)?;
        nanos = n as i128;
        rest = after;
        rest = rest.strip_prefix(' ').unwrap_or(rest);
        let offset = match rest.as_bytes().first() {
            None => 0,
            Some(b'Z' | b'z') if rest.len() == 1 => {
                rest = "";
                0
            }
            Some(&sign @ (b'+' | b'-')) => {
                let (h, r) = digits(&rest[1..], 2)?;
                let r = r.strip_prefix(':').unwrap_or(r);
                let (m, r) = if r.is_empty() { (0, r) } else { digits(r, 2)? };
                if h > 23 || m > 59 {
                    return None;
                }
                rest = r;
                let minutes = (h * 60 + m) as i128;
                if sign == b'+' {
                    minutes
                } else {
                    -minutes
                }
            }
            _ => return None,
        };
        nanos -= offset * 60_000_000_000;
    }
    if !rest.is_empty() {
        return None;
    }
    Some(days * NANOS_PER_DAY + nanos)
}

/// `HH:MM[:SS[.fffffffff]]`: nanoseconds since midnight, or `None` if `s` is not such a text.
pub fn parse_time_of_day(s: &str) -> Option<i64> {
    match time_of_day(s)? {
        (n, "") => Some(n),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_and_times_of_iso_8601() {
        let us = |s: &str| parse_instant(s).map(|n| n / 1000);
        assert_eq!(us("1970-01-01"), Some(0));
        assert_eq!(
            us("2024-01-02T03:04:05.678901Z"),
            Some(1_704_164_645_678_901)
        );
        assert_eq!(
            us("2024-01-02 03:04:05.678901"),
            Some(1_704_164_645_678_901)
        );
        assert_eq!(
            us("2024-01-02T05:04:05.678901+02:00"),
            Some(1_704_164_645_678_901)
        );
        assert_eq!(
            us("2024-01-02T01:04:05.678901-0200"),
            Some(1_704_164_645_678_901)
        );
        assert_eq!(us("2024-01-02T03:04Z"), Some(1_704_164_640_000_000));
        assert_eq!(
            parse_instant("2024-01-02T03:04:05.000000001"),
            Some(1_704_164_645_000_000_001)
        );
        assert_eq!(us("1969-12-31T23:59:59.999999"), Some(-1));
        assert_eq!(us("2000-02-29"), Some(951_782_400_000_000));
        assert_eq!(us("9999-12-31"), Some(253_402_214_400_000_000));
        assert_eq!(us("-0001-01-01").map(|v| v < 0), Some(true));
        for bad in [
            "",
            "2024",
            "2024-1-02",
            "2024-13-01",
            "2023-02-29",
            "2024-01-02T24:00",
            "2024-01-02T03:04:05.",
            "2024-01-02T03:04:05.1234567890",
            "2024-01-02Z",
            "2024-01-02T03:04:05 UTC",
            "17041646456789",
            "2024-01-02T03:04:05+2",
        ] {
            assert_eq!(parse_instant(bad), None, "{bad}");
        }
        assert_eq!(parse_time_of_day("03:04:05.5"), Some(11_045_500_000_000));
        assert_eq!(parse_time_of_day("23:59"), Some(86_340_000_000_000));
        assert_eq!(parse_time_of_day("24:00"), None);
    }
}
