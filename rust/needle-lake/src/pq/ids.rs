//! Partition ids: a file, or one of its row groups, by its path relative to the table.

use std::collections::BTreeMap;

/// Partition id of a file (path relative to the directory) or of one of its row groups.
pub fn partition_id(rel: &str, row_group: Option<usize>) -> String {
    match row_group {
        Some(rg) => format!("{rel}#rg={rg}"),
        None => rel.to_string(),
    }
}

/// Partition ids grouped by file: each file's row groups (`None` for the whole file), in file
/// order, so each file is opened once.
pub(crate) fn by_file(ids: &[String]) -> BTreeMap<&str, Vec<Option<usize>>> {
    let mut out: BTreeMap<&str, Vec<Option<usize>>> = BTreeMap::new();
    for id in ids {
        let (file, rg) = split_id(id);
        out.entry(file).or_default().push(rg);
    }
    out
}

/// Splits a partition id into the relative file path and the row group, if any.
pub fn split_id(id: &str) -> (&str, Option<usize>) {
    if let Some((file, rg)) = id.rsplit_once("#rg=") {
        if let Ok(n) = rg.parse() {
            return (file, Some(n));
        }
    }
    (id, None)
}

/// The order in which a file's row groups enter the index: the last first, row group 0 last.
/// An entry of row group 0 (or of the whole file) marks the file as indexed whole (see
/// [`marks_file`]): the index shows its changes in the order they were made, so a reader that
/// sees the marker sees every row group, and a reader of an index that a crash or a concurrent
/// run left half-way through a file reads that file whole instead of missing rows.
pub fn append_order(row_groups: usize) -> impl Iterator<Item = usize> {
    (0..row_groups).rev()
}

/// Whether partition `id` marks its file as indexed whole: the file itself, or its row group 0
/// (the last of the file's row groups to be added, the first to be removed).
pub fn marks_file(id: &str) -> bool {
    matches!(split_id(id).1, None | Some(0))
}

/// Partition ids in the order they leave the index: every file's marker first, so a file is
/// no longer taken as indexed before any of its row groups is gone.
pub fn removal_order(mut ids: Vec<String>) -> Vec<String> {
    ids.sort_by_cached_key(|id| (!marks_file(id), id.clone()));
    ids
}
