//! `needle`: build, maintain and query partition indexes; index Parquet directories.

use anyhow::{bail, Context, Result};
use clap::Parser;
use needle_index::{Config, Index, Options};
use needle_lake::delta;
use needle_lake::object;
use needle_lake::pq;
use needle_lake::{Key, ValueType};
use std::io::BufRead;
use std::path::PathBuf;
use std::process::ExitCode;

mod args;
mod output;
mod serve;

use args::{Cli, Cmd, TypeArg};
use output::{
    bar, describe, describe_requests, print_found, print_value_kind, spinner, with_progress,
};

fn open_with(index: &PathBuf, read_only: bool) -> Result<Index> {
    if !index.join("MANIFEST").exists() {
        bail!(
            "{} is not an index (no MANIFEST); create one with `needle create`",
            index.display()
        );
    }
    Ok(Index::open(
        index,
        Options {
            read_only,
            ..Options::default()
        },
    )?)
}

fn open(index: &PathBuf) -> Result<Index> {
    open_with(index, false)
}

/// Queries take a shared lock, so several can run at once.
fn open_ro(index: &PathBuf) -> Result<Index> {
    open_with(index, true)
}

fn parse_all(ty: TypeArg, values: &[String]) -> Result<Vec<Key>> {
    values
        .iter()
        .map(|s| Ok(ValueType::from(ty).parse(s)?))
        .collect()
}

/// The URL a path argument holds, if it names an object store.
fn url_of(arg: &std::path::Path) -> Option<&str> {
    arg.to_str().filter(|s| object::is_url(s))
}

/// An object store location given as a path argument (`--index s3://…`).
fn location(arg: &std::path::Path) -> Result<object::Location> {
    match url_of(arg) {
        Some(url) => Ok(object::Location::parse(url)?),
        None => bail!(
            "{}: with files on an object store, the index is a URL too",
            arg.display()
        ),
    }
}

/// What publishing an index on an object store did.
fn print_published(
    p: &object::PublishReport,
    table: &object::Location,
    index: Option<&object::Location>,
) {
    println!(
        "published {} segments ({} bytes) to {}; {} objects of earlier publications removed",
        p.segments,
        p.bytes,
        index.map_or_else(|| table.url_of(pq::INDEX_SUBDIR), |l| format!("{l:?}")),
        p.deleted
    );
}

fn run(cli: Cli) -> Result<()> {
    match cli.cmd {
        Cmd::Create {
            index,
            buckets,
            fingerprint_bits,
        } => {
            Index::create(
                &index,
                Config {
                    buckets,
                    fingerprint_bits,
                },
                Options::default(),
            )?;
            println!(
                "created {} ({buckets} buckets, {fingerprint_bits}-bit fingerprints)",
                index.display()
            );
        }
        Cmd::Add {
            index,
            partition,
            file,
            ty,
        } => {
            let ix = open(&index)?;
            let reader: Box<dyn BufRead> = match &file {
                Some(p) if p.as_os_str() != "-" => Box::new(std::io::BufReader::new(
                    std::fs::File::open(p)
                        .with_context(|| format!("cannot open {}", p.display()))?,
                )),
                _ => Box::new(std::io::stdin().lock()),
            };
            let pb = spinner("reading values");
            let mut hashes = Vec::new();
            for (n, line) in reader.lines().enumerate() {
                let line = line.context("cannot read input")?;
                let line = line.strip_suffix('\r').unwrap_or(&line);
                let v = ValueType::from(ty)
                    .parse(line)
                    .with_context(|| format!("line {}", n + 1))?;
                hashes.push(v.hash());
                if n % 65536 == 0 {
                    pb.set_position(n as u64);
                }
            }
            pb.finish_and_clear();
            ix.append_hashes(&partition, &hashes)?;
            ix.flush()?;
            ix.maybe_merge(8)?;
            println!("added partition {partition:?} with {} values", hashes.len());
        }
        Cmd::RemovePartition { index, partition } => {
            let ix = open(&index)?;
            ix.remove_partition(&partition)?;
            ix.flush()?;
            println!("removed partition {partition:?}");
        }
        Cmd::DeleteValue {
            index,
            partition,
            values,
            ty,
        } => {
            let ix = open(&index)?;
            let vals = parse_all(ty, &values)?;
            let hashes: Vec<u64> = vals.iter().map(Key::hash).collect();
            ix.delete_hashes(&partition, &hashes)?;
            ix.flush()?;
            println!("deleted {} values from {partition:?}", vals.len());
        }
        Cmd::Query { index, values, ty } => {
            let ix = open_ro(&index)?;
            let vals = parse_all(ty, &values)?;
            for (s, v) in values.iter().zip(&vals) {
                let c = ix.query_hash(v.hash())?;
                if vals.len() > 1 {
                    println!("{s}:");
                }
                for id in c {
                    println!("{id}");
                }
            }
        }
        Cmd::Stats { index, probes } => {
            let ix = open_ro(&index)?;
            let st = ix.stats();
            println!("buckets               {}", st.buckets);
            println!("fingerprint bits      {}", st.fingerprint_bits);
            println!("segments              {}", st.segments);
            println!("partitions            {} ({} distinct ids, {} in memtable, {} removed awaiting merge)", st.partitions, st.distinct_ids, st.memtable_partitions, st.removed_partitions);
            println!("values                {}", st.values);
            println!("slots                 {}", st.slots);
            println!("occupancy             {:.4}", st.occupancy);
            println!(
                "expected FPR          {:.3e} per partition (occupancy x 2b / (2^f - 1))",
                st.expected_fpr
            );
            println!(
                "bytes on disk         {} ({:.2} per value)",
                st.bytes_on_disk,
                st.bytes_on_disk as f64 / st.values.max(1) as f64
            );
            if probes > 0 && st.distinct_ids > 0 {
                let pb = bar(probes, "probing absent values");
                let mut s = 0x5EED_u64;
                let mut hits = 0u64;
                for i in 0..probes {
                    s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
                    let mut z = s;
                    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                    hits += ix.query_hash(z ^ (z >> 31))?.len() as u64;
                    if i % 4096 == 0 {
                        pb.set_position(i);
                    }
                }
                pb.finish_and_clear();
                println!("measured FPR          {:.3e} per partition ({hits} false candidates in {probes} random probes)", hits as f64 / (probes as f64 * st.distinct_ids as f64));
            }
        }
        Cmd::Merge { index } => {
            let ix = open(&index)?;
            let pb = spinner("merging");
            pb.enable_steady_tick(std::time::Duration::from_millis(200));
            ix.flush()?;
            let r = ix.merge()?;
            pb.finish_and_clear();
            match r {
                Some(r) => println!("merged {} segments: {} partitions kept, {} removed partitions reclaimed, {} bytes", r.inputs, r.partitions, r.reclaimed, r.bytes),
                None => println!("nothing to merge"),
            }
        }
        Cmd::Verify { index } => {
            let ix = open_ro(&index)?;
            ix.verify()?;
            println!("ok");
        }
        Cmd::IndexParquet { dir, how, staging } => {
            let o = how.options()?;
            if let Some(url) = url_of(&dir) {
                let table = object::Location::parse(url)?;
                let index = o.index.as_deref().map(location).transpose()?;
                let (r, p) = with_progress(|progress| {
                    object::index_parquet(&table, index.as_ref(), staging.as_deref(), &o, progress)
                })?;
                println!("{}", describe(&r));
                print_published(&p, &table, index.as_ref());
                return Ok(());
            }
            let index_dir = o
                .index
                .clone()
                .unwrap_or_else(|| dir.join(pq::INDEX_SUBDIR));
            let r = with_progress(|p| pq::index_dir(&dir, &o, p))?;
            println!("{}", describe(&r));
            print_value_kind(&index_dir)?;
        }
        Cmd::IndexDelta {
            table,
            how,
            staging,
        } => {
            let o = how.options()?;
            if let Some(url) = url_of(&table) {
                let table = object::Location::parse(url)?;
                let index = o.index.as_deref().map(location).transpose()?;
                let (version, r, p) = with_progress(|progress| {
                    object::index_delta(&table, index.as_ref(), staging.as_deref(), &o, progress)
                })?;
                println!("version {version}: {}", describe(&r));
                print_published(&p, &table, index.as_ref());
                return Ok(());
            }
            if let Some(dir) = staging {
                bail!(
                    "--staging {} is for a table on an object store; a local table's index is \
                     built in place",
                    dir.display()
                );
            }
            let index_dir = delta::index_dir_of(&table, o.index.as_deref());
            let (version, r) = with_progress(|p| delta::index_delta(&table, &o, p))?;
            println!("version {version}: {}", describe(&r));
            print_value_kind(&index_dir)?;
        }
        Cmd::Serve {
            index,
            parquet,
            listen,
            ty,
            threads,
            refresh_ms,
        } => {
            let index = match (index, &parquet) {
                (Some(i), _) => i,
                (None, Some(dir)) => dir.join(pq::INDEX_SUBDIR),
                (None, None) => bail!("give the index directory, or --parquet DIR"),
            };
            serve::serve(serve::ServeOptions {
                index,
                parquet,
                kind: ty.into(),
                listen,
                threads,
                refresh: std::time::Duration::from_millis(refresh_ms.max(10)),
            })?;
        }
        Cmd::Lookup {
            dir,
            value,
            value_option,
            index,
            version,
            candidates_only,
        } => {
            let value = value
                .or(value_option)
                .expect("clap requires a value or --value");
            if let Some(url) = url_of(&dir) {
                let table = object::Location::parse(url)?;
                let index = index.as_deref().map(location).transpose()?;
                let r = object::lookup(&table, index.as_ref(), version, &value)?;
                eprintln!(
                    "{} candidate partitions; object store: index {}, files {}",
                    r.result.candidates.len(),
                    describe_requests(r.index),
                    describe_requests(r.files)
                );
                print_found(&r.result, candidates_only);
                return Ok(());
            }
            let index_dir = delta::index_dir_of(&dir, index.as_deref());
            let r = if delta::indexed_version(&index_dir)?.is_some() {
                delta::lookup(&dir, version, index.as_deref(), &value)?
            } else if version.is_some() {
                bail!(
                    "--version reads a Delta table indexed by `needle index-delta`, and {} is not one",
                    index_dir.display()
                );
            } else {
                pq::lookup(&dir, index.as_deref(), &value)?
            };
            eprintln!("{} candidate partitions", r.candidates.len());
            print_found(&r, candidates_only);
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("needle: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
