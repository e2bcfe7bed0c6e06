//! The background merge thread.

use super::*;

impl Index {
    /// Starts a background thread that merges whenever there are more than
    /// `max_segments` segments, checking every `interval`.
    pub fn start_merger(self: &Arc<Self>, max_segments: usize, interval: Duration) -> MergerHandle {
        let weak: Weak<Index> = Arc::downgrade(self);
        let stop = Arc::new(AtomicBool::new(false));
        let errors = Arc::new(Mutex::new(Vec::new()));
        let (s, errs) = (stop.clone(), errors.clone());
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                let Some(ix) = weak.upgrade() else { break };
                if ix.segment_count() > max_segments {
                    if let Err(e) = ix.maybe_merge(max_segments) {
                        lock(&errs).push(e.to_string());
                    }
                }
                drop(ix);
                std::thread::sleep(interval);
            }
        });
        MergerHandle {
            stop,
            thread: Some(thread),
            errors,
        }
    }
}

/// Controls the background merge thread of [`Index::start_merger`]; stops it when dropped.
pub struct MergerHandle {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    errors: Arc<Mutex<Vec<String>>>,
}

impl MergerHandle {
    /// Errors the background merges ran into (a failed merge changes nothing).
    pub fn errors(&self) -> Vec<String> {
        lock(&self.errors).clone()
    }

    /// Stops the thread and waits for it.
    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for MergerHandle {
    fn drop(&mut self) {
        self.halt();
    }
}
