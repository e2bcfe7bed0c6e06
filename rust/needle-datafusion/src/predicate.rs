//! The values a query's filters allow for the indexed column: what the index is asked for.

use datafusion::common::ScalarValue;
use datafusion::logical_expr::expr::InList;
use datafusion::logical_expr::{BinaryExpr, Expr, Operator};
use needle_lake::{Key, TimeUnit, ValueType, NANOS_PER_DAY};

/// The values `column` must equal for a row to pass `filter`, when the filter says so exactly:
/// `column = v`, `v = column`, `column IN (v, ...)`, a disjunction of those, or a conjunction
/// holding one (the smallest set, every conjunct must hold). `None` when the filter allows other
/// values (or says nothing of the column), and for values the index cannot compare exactly with
/// the column's (another type, a cast): those queries read every file.
///
/// A `NULL` among the values matches no row (`column = NULL` is never true), so it is left out:
/// an empty set means no row can pass.
pub fn values_of(filter: &Expr, column: &str, kind: ValueType) -> Option<Vec<Key>> {
    match filter {
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => match op {
            Operator::Eq => match (left.as_ref(), right.as_ref()) {
                (Expr::Column(c), Expr::Literal(v, _)) | (Expr::Literal(v, _), Expr::Column(c))
                    if c.name == column =>
                {
                    key_of(v, kind).map(|k| k.into_iter().collect())
                }
                _ => None,
            },
            Operator::Or => {
                let mut a = values_of(left, column, kind)?;
                a.extend(values_of(right, column, kind)?);
                a.sort();
                a.dedup();
                Some(a)
            }
            Operator::And => match (
                values_of(left, column, kind),
                values_of(right, column, kind),
            ) {
                (Some(a), Some(b)) => Some(if a.len() <= b.len() { a } else { b }),
                (a, b) => a.or(b),
            },
            _ => None,
        },
        Expr::InList(InList {
            expr,
            list,
            negated: false,
        }) => match expr.as_ref() {
            Expr::Column(c) if c.name == column => {
                let mut out = Vec::with_capacity(list.len());
                for e in list {
                    match e {
                        Expr::Literal(v, _) => out.extend(key_of(v, kind)?),
                        _ => return None,
                    }
                }
                out.sort();
                out.dedup();
                Some(out)
            }
            _ => None,
        },
        _ => None,
    }
}

/// The key a literal compares equal to in a column of `kind`: `Some(None)` for `NULL` (equal to
/// nothing); `None` when the literal is not of the column's kind, so the index cannot say.
fn key_of(v: &ScalarValue, kind: ValueType) -> Option<Option<Key>> {
    if v.is_null() {
        return Some(None);
    }
    let instant = |n: i64, unit: TimeUnit| Key::Instant(n as i128 * unit.nanos());
    let time = |n: i64, unit: TimeUnit| Key::Time(n * unit.nanos() as i64);
    let key = match (kind, v) {
        (ValueType::String, ScalarValue::Utf8(Some(s)))
        | (ValueType::String, ScalarValue::LargeUtf8(Some(s)))
        | (ValueType::String, ScalarValue::Utf8View(Some(s))) => Key::Str(s.clone()),
        (ValueType::Hex, ScalarValue::Binary(Some(b)))
        | (ValueType::Hex, ScalarValue::LargeBinary(Some(b)))
        | (ValueType::Hex, ScalarValue::BinaryView(Some(b)))
        | (ValueType::Hex, ScalarValue::FixedSizeBinary(_, Some(b))) => Key::Bytes(b.clone()),
        (ValueType::Int, ScalarValue::Int8(Some(i))) => Key::Int(*i as i128),
        (ValueType::Int, ScalarValue::Int16(Some(i))) => Key::Int(*i as i128),
        (ValueType::Int, ScalarValue::Int32(Some(i))) => Key::Int(*i as i128),
        (ValueType::Int, ScalarValue::Int64(Some(i))) => Key::Int(*i as i128),
        (ValueType::Int, ScalarValue::UInt8(Some(i))) => Key::Int(*i as i128),
        (ValueType::Int, ScalarValue::UInt16(Some(i))) => Key::Int(*i as i128),
        (ValueType::Int, ScalarValue::UInt32(Some(i))) => Key::Int(*i as i128),
        (ValueType::Int, ScalarValue::UInt64(Some(i))) => Key::Int(*i as i128),
        // An instant whatever the unit and zone the literal carries: the index holds instants.
        (ValueType::Timestamp(_), ScalarValue::TimestampSecond(Some(n), _)) => {
            instant(*n, TimeUnit::Seconds)
        }
        (ValueType::Timestamp(_), ScalarValue::TimestampMillisecond(Some(n), _)) => {
            instant(*n, TimeUnit::Millis)
        }
        (ValueType::Timestamp(_), ScalarValue::TimestampMicrosecond(Some(n), _)) => {
            instant(*n, TimeUnit::Micros)
        }
        (ValueType::Timestamp(_), ScalarValue::TimestampNanosecond(Some(n), _)) => {
            instant(*n, TimeUnit::Nanos)
        }
        (ValueType::Timestamp(_), ScalarValue::Date32(Some(d))) => {
            Key::Instant(*d as i128 * NANOS_PER_DAY)
        }
        (ValueType::Timestamp(_), ScalarValue::Date64(Some(ms))) => instant(*ms, TimeUnit::Millis),
        (ValueType::Time(_), ScalarValue::Time32Second(Some(n))) => {
            time(*n as i64, TimeUnit::Seconds)
        }
        (ValueType::Time(_), ScalarValue::Time32Millisecond(Some(n))) => {
            time(*n as i64, TimeUnit::Millis)
        }
        (ValueType::Time(_), ScalarValue::Time64Microsecond(Some(n))) => time(*n, TimeUnit::Micros),
        (ValueType::Time(_), ScalarValue::Time64Nanosecond(Some(n))) => time(*n, TimeUnit::Nanos),
        _ => return None,
    };
    Some(Some(key))
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::prelude::{col, lit};

    fn ints(v: &[i128]) -> Option<Vec<Key>> {
        Some(v.iter().map(|&i| Key::Int(i)).collect())
    }

    #[test]
    fn equality_in_lists_and_their_combinations() {
        let k = ValueType::Int;
        assert_eq!(values_of(&col("k").eq(lit(5i64)), "k", k), ints(&[5]));
        assert_eq!(values_of(&lit(5i32).eq(col("k")), "k", k), ints(&[5]));
        let list = col("k").in_list(vec![lit(3i64), lit(1i64), lit(3i64)], false);
        assert_eq!(values_of(&list, "k", k), ints(&[1, 3]));
        let either = col("k").eq(lit(7i64)).or(col("k").eq(lit(2i64)));
        assert_eq!(values_of(&either, "k", k), ints(&[2, 7]));
        // A conjunction: the smaller set, or the one conjunct that names the column.
        let both = list.clone().and(col("k").eq(lit(1i64)));
        assert_eq!(values_of(&both, "k", k), ints(&[1]));
        let other = col("p").eq(lit("x")).and(col("k").eq(lit(9i64)));
        assert_eq!(values_of(&other, "k", k), ints(&[9]));
        // NULL matches nothing.
        let null = col("k").in_list(vec![lit(ScalarValue::Int64(None)), lit(4i64)], false);
        assert_eq!(values_of(&null, "k", k), ints(&[4]));
        assert_eq!(
            values_of(&col("k").eq(lit(ScalarValue::Int64(None))), "k", k),
            ints(&[])
        );
    }

    #[test]
    fn filters_that_allow_other_values_read_every_file() {
        let k = ValueType::Int;
        for f in [
            col("k").gt(lit(5i64)),
            col("k").in_list(vec![lit(1i64)], true),
            col("j").eq(lit(5i64)),
            col("k").eq(lit(5i64)).or(col("j").eq(lit(5i64))),
            col("k").eq(col("j")),
            col("k").eq(lit(5.0f64)),
            col("k").eq(lit("5")),
        ] {
            assert_eq!(values_of(&f, "k", k), None, "{f}");
        }
    }

    #[test]
    fn instants_whatever_their_unit() {
        let k = ValueType::Timestamp(TimeUnit::Micros);
        let us = lit(ScalarValue::TimestampMicrosecond(Some(1_500_000), None));
        let s = lit(ScalarValue::TimestampSecond(Some(1), Some("+02:00".into())));
        let want = |ns| Some(vec![Key::Instant(ns)]);
        assert_eq!(values_of(&col("t").eq(us), "t", k), want(1_500_000_000));
        assert_eq!(values_of(&col("t").eq(s), "t", k), want(1_000_000_000));
        let day = lit(ScalarValue::Date32(Some(2)));
        assert_eq!(
            values_of(&col("t").eq(day), "t", k),
            want(2 * NANOS_PER_DAY)
        );
    }
}
