//! Needle's partition index inside DataFusion.
//!
//! [`NeedleTable`] is a [`TableProvider`](datafusion::catalog::TableProvider) over a directory of
//! Parquet files indexed by `needle index-parquet`, on a local disk or on object storage
//! ([`NeedleTable::open_url`]): a query that asks for rows whose indexed column equals one of a
//! few values reads only the files (or row groups) that may hold them.
//!
//! ```no_run
//! # async fn run() -> datafusion::error::Result<()> {
//! use datafusion::prelude::SessionContext;
//! use needle_datafusion::NeedleTable;
//! use std::sync::Arc;
//!
//! let ctx = SessionContext::new();
//! let events = NeedleTable::open(&ctx, "/data/events", None).await?; // index: /data/events/.needle-index
//! ctx.register_table("events", Arc::new(events))?;
//! ctx.sql("SELECT * FROM events WHERE request_id = 'a1b2'").await?.show().await?;
//! # Ok(())
//! # }
//! ```

mod narrow;
mod predicate;
mod table;

pub use predicate::values_of;
pub use table::{NeedleTable, ScanStats};
