//! Indexing a directory of Parquet files on one column, and lookups that read the matching rows.
//!
//! One file per part: what an index records (`meta`), what a column holds (`kinds`), where
//! files are read from (`files`), partition ids (`ids`), indexing (`index`) and lookups
//! (`lookup`). This module's API is the union of their public items.

mod files;
mod ids;
mod index;
mod kinds;
mod lookup;
mod meta;

pub use files::*;
pub use ids::*;
pub use index::*;
pub use kinds::*;
pub use lookup::*;
pub use meta::*;

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Int64Array, RecordBatch};
    use arrow_schema::{DataType, Field, Schema};
    use needle_index::{Index, Options};
    use parquet::arrow::ArrowWriter;
    use std::fs::File;
    use std::path::Path;
    use std::sync::Arc;

    fn write_file(path: &Path, values: std::ops::Range<i64>) {
        let schema = Arc::new(Schema::new(vec![Field::new("k", DataType::Int64, false)]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![Arc::new(Int64Array::from_iter_values(values))],
        )
        .unwrap();
        let mut w = ArrowWriter::try_new(File::create(path).unwrap(), schema, None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
    }

    /// Whole files indexed on column `k`, in a small index.
    fn options_on_k() -> IndexParquetOptions {
        IndexParquetOptions {
            column: "k".into(),
            row_groups: false,
            buckets: Some(64),
            fingerprint_bits: 16,
            index: None,
        }
    }

    /// Indexes every file of `dir` on `k` with index options `options`.
    fn index_all_of(dir: &Path, options: Options) -> IndexReport {
        let files = parquet_files(dir).unwrap();
        index_files_with(
            &LocalFiles(dir),
            &dir.join(INDEX_SUBDIR),
            &relative(dir, &files),
            &options_on_k(),
            options,
            Missing::Refused,
            |_, _, _| {},
        )
        .unwrap()
    }

    #[test]
    fn a_first_build_ends_in_one_segment_and_later_runs_merge_only_when_segments_pile_up() {
        let dir = tempfile::tempdir().unwrap();
        // A memtable of one byte: every file's filter is flushed as a segment of its own.
        let tiny = || Options {
            flush_bytes: 1,
            sync: false,
            ..Options::default()
        };
        let segments = || {
            Index::open(dir.path().join(INDEX_SUBDIR), Options::default())
                .unwrap()
                .segment_count()
        };
        let index_all = || index_all_of(dir.path(), tiny());
        for i in 0..4 {
            write_file(
                &dir.path().join(format!("f{i}.parquet")),
                i * 100..i * 100 + 100,
            );
        }
        let r = index_all();
        assert_eq!(r.added, 4);
        assert_eq!(segments(), 1);

        write_file(&dir.path().join("f4.parquet"), 400..500);
        let r = index_all();
        assert_eq!((r.added, r.unchanged), (1, 4));
        assert_eq!(
            segments(),
            2,
            "one new file adds a segment, without rewriting the index"
        );

        let ix = Index::open(dir.path().join(INDEX_SUBDIR), Options::default()).unwrap();
        for (v, file) in [(7, "f0.parquet"), (450, "f4.parquet")] {
            assert!(ix
                .query(&needle_index::Value::Int(v))
                .unwrap()
                .contains(&file.to_string()));
        }
    }

    #[test]
    fn a_lookup_answers_while_a_writer_holds_the_index() {
        let dir = tempfile::tempdir().unwrap();
        write_file(&dir.path().join("f0.parquet"), 0..100);
        index_all_of(dir.path(), Options::default());
        let _writer = Index::open(dir.path().join(INDEX_SUBDIR), Options::default()).unwrap();
        let found = lookup(dir.path(), None, "42").expect("a lookup takes no lock");
        assert_eq!(found.rows.len(), 1);
    }
}
