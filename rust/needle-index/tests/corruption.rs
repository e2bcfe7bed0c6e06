//! Damaged manifest, segment and WAL files are reported with the file's name, never served;
//! a torn WAL tail is the one damage recovered from (by dropping the incomplete record).

mod common;
use common::{create, fast_opts};
use needle_index::{Error, Index};
use std::path::{Path, PathBuf};

fn files(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(prefix))
        .collect();
    v.sort();
    v
}

/// An index with one segment (p0, p1) and two partitions only in the WAL (p2, p3).
fn build() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let ix = create(dir.path(), 100, 16);
    for p in 0..4 {
        let hs: Vec<u64> = (0..200)
            .map(|v| needle_index::hash_i64(p * 1000 + v))
            .collect();
        ix.append_hashes(&format!("p{p}"), &hs).unwrap();
        if p == 1 {
            ix.flush().unwrap();
        }
    }
    dir
}

fn flip(path: &Path, at: usize) {
    let mut b = std::fs::read(path).unwrap();
    b[at] ^= 0x10;
    std::fs::write(path, b).unwrap();
}

fn truncate(path: &Path, by: u64) {
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    let len = f.metadata().unwrap().len();
    f.set_len(len - by).unwrap();
}

fn expect_corrupt(dir: &Path, file: &Path) {
    match Index::open(dir, fast_opts()) {
        Err(e @ Error::Corrupt { .. }) => {
            let msg = e.to_string();
            assert!(
                msg.contains(&*file.file_name().unwrap().to_string_lossy()),
                "{msg}"
            );
        }
        Err(e) => panic!("expected a corruption error, got {e}"),
        Ok(_) => panic!("damaged {} was accepted", file.display()),
    }
}

#[test]
fn intact_index_opens() {
    let dir = build();
    let ix = Index::open(dir.path(), fast_opts()).unwrap();
    assert_eq!(ix.stats().partitions, 4);
    ix.verify().unwrap();
}

#[test]
fn manifest_bit_flips_and_truncation_are_detected() {
    let dir = build();
    let man = dir.path().join("MANIFEST");
    let len = std::fs::metadata(&man).unwrap().len() as usize;
    for at in [0, 9, len / 2, len - 1] {
        let d = build();
        let m = d.path().join("MANIFEST");
        flip(&m, at);
        expect_corrupt(d.path(), &m);
    }
    truncate(&man, 3);
    expect_corrupt(dir.path(), &man);
}

#[test]
fn segment_header_table_and_truncation_are_detected_at_open() {
    for at in [0usize, 20, 70] {
        let d = build();
        let seg = files(d.path(), "seg-").remove(0);
        flip(&seg, at);
        expect_corrupt(d.path(), &seg);
    }
    let d = build();
    let seg = files(d.path(), "seg-").remove(0);
    truncate(&seg, 1);
    expect_corrupt(d.path(), &seg);
}

#[test]
fn segment_row_damage_is_detected_on_read() {
    let d = build();
    let seg = files(d.path(), "seg-").remove(0);
    let len = std::fs::metadata(&seg).unwrap().len() as usize;
    flip(&seg, len - 100);
    let ix = Index::open(d.path(), fast_opts()).unwrap();
    let e = ix.verify().unwrap_err();
    assert!(
        matches!(e, Error::Corrupt { .. }) && e.to_string().contains("seg-"),
        "{e}"
    );
    // Some query reads the damaged row and must fail rather than answer.
    let errors = (0..5000)
        .filter(|&v| ix.query_hash(needle_index::hash_i64(v)).is_err())
        .count();
    assert!(errors > 0);
}

#[test]
fn wal_damage_before_the_tail_is_detected() {
    let d = build();
    let wal = files(d.path(), "wal-").remove(0);
    flip(&wal, 40); // inside the first record's payload
    expect_corrupt(d.path(), &wal);
    let d = build();
    let wal = files(d.path(), "wal-").remove(0);
    flip(&wal, 3); // header magic
    expect_corrupt(d.path(), &wal);
    let d = build();
    let wal = files(d.path(), "wal-").remove(0);
    flip(&wal, 25); // first record's length
    expect_corrupt(d.path(), &wal);
}

#[test]
fn torn_wal_tail_is_truncated_and_earlier_records_survive() {
    let d = build();
    let wal = files(d.path(), "wal-").remove(0);
    truncate(&wal, 7);
    let ix = Index::open(d.path(), fast_opts()).unwrap();
    let ids: Vec<String> = ix.partitions().into_iter().map(|p| p.id).collect();
    assert_eq!(
        ids,
        ["p0", "p1", "p2"],
        "the torn p3 append is dropped, p2 kept"
    );
    for v in 0..200 {
        assert!(ix
            .query_hash(needle_index::hash_i64(2000 + v))
            .unwrap()
            .contains(&"p2".to_string()));
    }
    drop(ix);
    // Recovery is durable: the next open sees a clean log.
    let ix = Index::open(d.path(), fast_opts()).unwrap();
    assert_eq!(ix.partitions().len(), 3);
}

#[test]
fn missing_segment_is_reported() {
    let d = build();
    let seg = files(d.path(), "seg-").remove(0);
    std::fs::remove_file(&seg).unwrap();
    let e = Index::open(d.path(), fast_opts()).err().unwrap();
    assert!(e.to_string().contains("seg-"), "{e}");
}

#[test]
fn second_writer_is_refused() {
    let d = build();
    let _a = Index::open(d.path(), fast_opts()).unwrap();
    assert!(matches!(
        Index::open(d.path(), fast_opts()),
        Err(Error::Locked(_))
    ));
}

#[test]
fn read_only_opens_share_and_refuse_writes() {
    let d = build();
    let ro = needle_index::Options {
        read_only: true,
        ..fast_opts()
    };
    let a = Index::open(d.path(), ro).unwrap();
    let b = Index::open(d.path(), ro).unwrap();
    assert_eq!(a.partitions().len(), 4);
    assert!(b
        .query_hash(needle_index::hash_i64(3000))
        .unwrap()
        .contains(&"p3".to_string()));
    assert!(matches!(
        a.append_hashes("x", &[1]),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(a.flush(), Err(Error::InvalidArgument(_))));
    assert!(matches!(
        Index::open(d.path(), fast_opts()),
        Err(Error::Locked(_))
    ));
    drop((a, b));
    // A torn tail is ignored but left alone by a read-only open, and repaired by a writer.
    let wal = files(d.path(), "wal-").remove(0);
    truncate(&wal, 5);
    let len = std::fs::metadata(&wal).unwrap().len();
    assert_eq!(Index::open(d.path(), ro).unwrap().partitions().len(), 3);
    assert_eq!(std::fs::metadata(&wal).unwrap().len(), len);
    assert_eq!(
        Index::open(d.path(), fast_opts())
            .unwrap()
            .partitions()
            .len(),
        3
    );
    assert!(std::fs::metadata(&wal).unwrap().len() < len);
}

/// Files an interrupted flush or merge can leave behind: an unreferenced segment, a
/// half-written manifest, an empty next log, a stale older log. Open cleans up and loses nothing.
#[test]
fn leftovers_of_interrupted_flush_and_merge_are_recovered() {
    let d = build();
    let seg = files(d.path(), "seg-").remove(0);
    std::fs::copy(&seg, d.path().join("seg-00000000000000ff.nseg")).unwrap();
    std::fs::write(d.path().join("MANIFEST.tmp"), b"half a manifest").unwrap();
    std::fs::write(d.path().join("wal-0000000000000000.log"), b"stale").unwrap();
    let wal = files(d.path(), "wal-").pop().unwrap();
    let seq = u64::from_str_radix(&wal.file_name().unwrap().to_string_lossy()[4..20], 16).unwrap();
    let mut h = Vec::new();
    h.extend_from_slice(b"NDLWALv1");
    h.extend_from_slice(&1u32.to_le_bytes());
    h.extend_from_slice(&(seq + 1).to_le_bytes());
    let crc = crc32c::crc32c(&h);
    h.extend_from_slice(&crc.to_le_bytes());
    std::fs::write(d.path().join(format!("wal-{:016x}.log", seq + 1)), &h).unwrap();
    let ix = Index::open(d.path(), fast_opts()).unwrap();
    assert_eq!(ix.partitions().len(), 4);
    for p in 0..4i64 {
        for v in 0..200 {
            assert!(ix
                .query_hash(needle_index::hash_i64(p * 1000 + v))
                .unwrap()
                .contains(&format!("p{p}")));
        }
    }
    assert!(!d.path().join("seg-00000000000000ff.nseg").exists());
    assert!(!d.path().join("MANIFEST.tmp").exists());
    assert!(!d.path().join("wal-0000000000000000.log").exists());
    // The index keeps working: writes land in the newest log and survive a reopen.
    ix.append_hashes("p9", &[needle_index::hash_i64(-9)])
        .unwrap();
    drop(ix);
    let ix = Index::open(d.path(), fast_opts()).unwrap();
    assert!(ix
        .query_hash(needle_index::hash_i64(-9))
        .unwrap()
        .contains(&"p9".to_string()));
    ix.flush().unwrap();
    ix.merge().unwrap();
    assert_eq!(ix.partitions().len(), 5);
}
