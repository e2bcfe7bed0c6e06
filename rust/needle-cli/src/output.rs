//! What `needle` shows while it works and when it is done: progress bars, reports, found rows.

use anyhow::Result;
use indicatif::{ProgressBar, ProgressStyle};
use needle_lake::object;
use needle_lake::pq;

pub(crate) fn spinner(msg: &str) -> ProgressBar {
    let pb = ProgressBar::new_spinner();
    pb.set_style(ProgressStyle::with_template("{spinner} {msg} {pos} [{elapsed}]").unwrap());
    pb.set_message(msg.to_string());
    pb
}

pub(crate) fn bar(len: u64, msg: &str) -> ProgressBar {
    let pb = ProgressBar::new(len);
    pb.set_style(
        ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} [{elapsed}<{eta}]")
            .unwrap()
            .progress_chars("=> "),
    );
    pb.set_message(msg.to_string());
    pb
}

/// Runs an indexing pass with a progress bar over its files.
pub(crate) fn with_progress<T>(
    job: impl FnOnce(&mut dyn FnMut(usize, usize, &str)) -> needle_lake::Result<T>,
) -> Result<T> {
    let mut pb: Option<ProgressBar> = None;
    let r = job(&mut |done, total, name| {
        let p = pb.get_or_insert_with(|| bar(total as u64, "indexing"));
        p.set_position(done as u64);
        p.set_message(name.to_string());
    });
    if let Some(p) = pb {
        p.finish_and_clear();
    }
    Ok(r?)
}

pub(crate) fn describe(r: &pq::IndexReport) -> String {
    format!(
        "indexed {} partitions ({} values); {} unchanged, {} removed",
        r.added, r.values, r.unchanged, r.removed
    )
}

/// For an index of dates, times or timestamps, how lookups read values (the unit of integers).
pub(crate) fn print_value_kind(index_dir: &std::path::Path) -> Result<()> {
    let meta = pq::ParquetMeta::load(index_dir)?;
    if meta.kind.unit().is_some() {
        println!("values of {:?}: {}", meta.column, meta.kind.describe());
    }
    Ok(())
}

pub(crate) fn describe_requests(r: object::Requests) -> String {
    format!(
        "{} requests in {} round trips ({} bytes)",
        r.requests, r.round_trips, r.bytes
    )
}

/// Prints a lookup's rows (file, row number, row), or only its candidate partitions.
pub(crate) fn print_found(r: &pq::LookupResult, candidates_only: bool) {
    if candidates_only {
        for c in &r.candidates {
            println!("{c}");
        }
    } else {
        for row in &r.rows {
            println!("{}\t{}\t{}", row.file, row.row, row.text);
        }
    }
}
