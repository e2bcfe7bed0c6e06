//! The `needle` command line: its subcommands and their arguments (clap).

use anyhow::{bail, Result};
use clap::{Parser, Subcommand, ValueEnum};
use needle_lake::pq::IndexParquetOptions;
use needle_lake::ValueType;
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "needle",
    version,
    about = "Which of a million files may hold this value, in two reads"
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) cmd: Cmd,
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum TypeArg {
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
pub(crate) enum Cmd {
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
        /// The table's folder (holding _delta_log), or object store URL.
        table: PathBuf,
        #[command(flatten)]
        how: IndexArgs,
        /// For a table on an object store: the local directory the index is built in before it
        /// is published, kept so a later run reads only the files added since (default: a
        /// temporary directory, and every run reads every live file).
        #[arg(long)]
        staging: Option<PathBuf>,
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
        /// Requests answered at once (the threads that read the index and the Parquet files).
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
pub(crate) struct IndexArgs {
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
    pub(crate) fn options(self) -> Result<IndexParquetOptions> {
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
