//! `needle`: build, maintain and query partition indexes; index Parquet directories.

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use needle_index::{Config, Index, Options};
use needle_lake::delta;
use needle_lake::object;
use needle_lake::pq::{self, IndexParquetOptions};
use needle_lake::{Key, ValueType};
use std::io::BufRead;
use std::path::PathBuf;
use std::process::ExitCode;

mod serve;

#[derive(Parser)]
#[command(
    name = "needle",
    version,
    about = "Which of a million files may hold this value, in two reads"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Clone, Copy, ValueEnum)]
enum TypeArg {
    /// UTF-8 strings.
    String,
    /// 64-bit integers, signed or unsigned (-9223372036854775808 to 18446744073709551615;
    /// an unsigned value above 9223372036854775807 hashes as the same 8 bytes as the signed
    /// value of its bits).
    Int,
    /// Binary values written in hexadecimal.
    Binary,
}

impl From<TypeArg> for ValueType {
    fn from(t: TypeArg) -> ValueType {
        match t {
            TypeArg::String => ValueType::String,
            TypeArg::Int => ValueType::Int,
            TypeArg::Binary => ValueType::Hex,
        }
    }
}

#[derive(Subcommand)]
enum Cmd {
    /// Create an empty index.
    Create {
        /// Index directory (created).
        index: PathBuf,
        /// Buckets B shared by every partition's filter.
        #[arg(long, default_value_t = 38_000)]
        buckets: u32,
        /// Fingerprint width in bits: 8, 16 or 32.
        #[arg(long, default_value_t = 16)]
        fingerprint_bits: u32,
    },
    /// Add a partition holding the values read from a file or stdin (one value per line).
    Add {
        /// Index directory.
        index: PathBuf,
        /// Partition id (for example a file path or URI).
        partition: String,
        /// File of values, one per line; stdin if absent or "-".
        #[arg(long)]
        file: Option<PathBuf>,
        /// How lines are interpreted.
        #[arg(long = "type", value_enum, default_value = "string")]
        ty: TypeArg,
    },
    /// Remove a partition (every entry with this id).
    RemovePartition {
        /// Index directory.
        index: PathBuf,
        /// Partition id.
        partition: String,
    },
    /// Delete values from a partition. Each value must have been added to it.
    ///
    /// Values are data: give those that begin with '-' (other than negative numbers) after
    /// `--`, as in `needle delete-value IX p -- --x`.
    DeleteValue {
        /// Index directory.
        index: PathBuf,
        /// Partition id.
        partition: String,
        /// Values to delete (after `--` if one begins with '-').
        #[arg(required = true, allow_negative_numbers = true)]
        values: Vec<String>,
        /// How values are interpreted.
        #[arg(long = "type", value_enum, default_value = "string")]
        ty: TypeArg,
    },
    /// Print the candidate partitions of each value.
    ///
    /// Values are data: give those that begin with '-' (other than negative numbers) after
    /// `--`, as in `needle query IX -- --help`.
    Query {
        /// Index directory.
        index: PathBuf,
        /// Values to look up (after `--` if one begins with '-').
        #[arg(required = true, allow_negative_numbers = true)]
        values: Vec<String>,
        /// How values are interpreted.
        #[arg(long = "type", value_enum, default_value = "string")]
        ty: TypeArg,
    },
    /// Partitions, values, occupancy, expected and measured false-positive rate, bytes.
    Stats {
        /// Index directory.
        index: PathBuf,
        /// Random absent values probed to measure the false-positive rate (0 to skip).
        #[arg(long, default_value_t = 100_000)]
        probes: u64,
    },
    /// Merge all segments into one, reclaiming removed partitions and deleted values.
    Merge {
        /// Index directory.
        index: PathBuf,
    },
    /// Check every checksum of every file.
    Verify {
        /// Index directory.
        index: PathBuf,
    },
    /// Index every Parquet file (or row group) of a directory on one column.
    ///
    /// The directory may be a prefix of an object store (`s3://bucket/table`; credentials and
    /// endpoint from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION, AWS_ENDPOINT_URL and
    /// AWS_ALLOW_HTTP): the index is built on local disk and published next to the files
    /// (`s3://bucket/table/.needle-index`, or --index URL).
    IndexParquet {
        /// Directory of Parquet files (searched recursively), or object store URL.
        dir: PathBuf,
        #[command(flatten)]
        how: IndexArgs,
        /// For files on an object store: the local directory the index is built in before it is
        /// published, kept so a later run reads only new files (default: a temporary directory,
        /// and every run reads every file).
        #[arg(long)]
        staging: Option<PathBuf>,
    },
    /// Bring the index of a Delta Lake table up to its latest version: index the data files
    /// added since the version it covers, drop the removed ones.
    IndexDelta {
        /// The table's folder (holding _delta_log).
        table: PathBuf,
        #[command(flatten)]
        how: IndexArgs,
    },
    /// Serve the index over HTTP (read-only, while another process may write it): candidates,
    /// lookups, health and Prometheus metrics.
    Serve {
        /// Index directory (with --parquet: default DIR/.needle-index).
        index: Option<PathBuf>,
        /// The Parquet directory (or Delta table, indexed by index-delta) the index covers: enables
        /// /lookup, and the value type comes from it. A Delta table is served at any version.
        #[arg(long)]
        parquet: Option<PathBuf>,
        /// Address to listen on (port 0: any free port, printed at start).
        #[arg(long, default_value = "127.0.0.1:8080")]
        listen: String,
        /// How values are interpreted (an index not built with index-parquet).
        #[arg(long = "type", value_enum, default_value = "string")]
        ty: TypeArg,
        /// Threads answering requests.
        #[arg(long, default_value_t = 4)]
        threads: usize,
        /// How often the index's files are checked for new data, in milliseconds.
        #[arg(long, default_value_t = 1000)]
        refresh_ms: u64,
    },
    /// Find the candidate files of a value and print the rows holding it.
    ///
    /// The value is data, never an option: give one that begins with '-' as `--value V` (or
    /// after `--`, as in `needle lookup DIR -- --help`); negative numbers may also be given as
    /// they are. Integer columns take every value a signed or unsigned 64-bit column holds.
    /// Dates and timestamps take ISO 8601 text (`2024-01-02`, `2024-01-02T03:04:05.678901Z`,
    /// `2024-01-02 05:04:05+02:00`; without a zone: UTC) or an integer in the unit
    /// `index-parquet` or `index-delta` printed (the files' own unit if they share one, else
    /// microseconds since 1970-01-01T00:00:00Z): a value is one instant whatever the unit a file
    /// stores it in, and a date is its midnight. Times of day take `HH:MM[:SS[.fffffffff]]` or
    /// an integer in that unit since midnight.
    Lookup {
        /// Directory indexed by index-parquet, or Delta table indexed by index-delta; or object
        /// store URL indexed by index-parquet.
        dir: PathBuf,
        /// Value of the indexed column (use --value, or `--` before it, if it begins with '-').
        #[arg(
            value_name = "VALUE",
            required_unless_present = "value_option",
            conflicts_with = "value_option",
            allow_negative_numbers = true
        )]
        value: Option<String>,
        /// Value of the indexed column, read as data even if it begins with '-' (`--value
        /// --help`, `--value=-x`).
        #[arg(
            long = "value",
            id = "value_option",
            value_name = "VALUE",
            allow_hyphen_values = true
        )]
        value_option: Option<String>,
        /// Index directory (default DIR/.needle-index).
        #[arg(long)]
        index: Option<PathBuf>,
        /// Version of the Delta table to read (default: the latest).
        #[arg(long)]
        version: Option<u64>,
        /// Only print the candidate files.
        #[arg(long)]
        candidates_only: bool,
    },
}

/// What `index-parquet` and `index-delta` index, and how.
#[derive(clap::Args)]
struct IndexArgs {
    /// Top-level column to index (strings, binary or integers; not a partition column).
    #[arg(long)]
    column: String,
    /// One partition per row group instead of per file.
    #[arg(long)]
    row_groups: bool,
    /// Buckets (default: sized for ~3 slots per bucket for the median file).
    #[arg(long)]
    buckets: Option<u32>,
    /// Fingerprint width in bits: 8, 16 or 32.
    #[arg(long, default_value_t = 16)]
    fingerprint_bits: u32,
    /// Index directory (default: .needle-index inside the directory or table).
    #[arg(long)]
    index: Option<PathBuf>,
}

impl IndexArgs {
    fn options(self) -> Result<IndexParquetOptions> {
        if !matches!(self.fingerprint_bits, 8 | 16 | 32) {
            bail!("--fingerprint-bits must be 8, 16 or 32");
        }
        Ok(IndexParquetOptions {
            column: self.column,
            row_groups: self.row_groups,
            buckets: self.buckets,
            fingerprint_bits: self.fingerprint_bits,
            index: self.index,
        })
    }
}

fn spinner(msg: &str) -> ProgressBar {
    let pb = ProgressBar::new_spinner();
    pb.set_style(ProgressStyle::with_template("{spinner} {msg} {pos} [{elapsed}]").unwrap());
    pb.set_message(msg.to_string());
    pb
}

fn bar(len: u64, msg: &str) -> ProgressBar {
    let pb = ProgressBar::new(len);
    pb.set_style(
        ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} [{elapsed}<{eta}]")
            .unwrap()
            .progress_chars("=> "),
    );
    pb.set_message(msg.to_string());
    pb
}

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

/// Runs an indexing pass with a progress bar over its files.
fn with_progress<T>(
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

fn describe(r: &pq::IndexReport) -> String {
    format!(
        "indexed {} partitions ({} values); {} unchanged, {} removed",
        r.added, r.values, r.unchanged, r.removed
    )
}

/// For an index of dates, times or timestamps, how lookups read values (the unit of integers).
fn print_value_kind(index_dir: &std::path::Path) -> Result<()> {
    let meta = pq::ParquetMeta::load(index_dir)?;
    if meta.kind.unit().is_some() {
        println!("values of {:?}: {}", meta.column, meta.kind.describe());
    }
    Ok(())
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

fn describe_requests(r: object::Requests) -> String {
    format!(
        "{} requests in {} round trips ({} bytes)",
        r.requests, r.round_trips, r.bytes
    )
}

/// Prints a lookup's rows (file, row number, row), or only its candidate partitions.
fn print_found(r: &pq::LookupResult, candidates_only: bool) {
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
                println!(
                    "published {} segments ({} bytes) to {}; {} objects of earlier publications removed",
                    p.segments,
                    p.bytes,
                    index.as_ref().map_or_else(|| table.url_of(pq::INDEX_SUBDIR), |l| format!("{l:?}")),
                    p.deleted
                );
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
        Cmd::IndexDelta { table, how } => {
            let o = how.options()?;
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
                if version.is_some() {
                    bail!("--version reads a local Delta table; {url} is on an object store");
                }
                let table = object::Location::parse(url)?;
                let index = index.as_deref().map(location).transpose()?;
                let r = object::lookup(&table, index.as_ref(), &value)?;
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
