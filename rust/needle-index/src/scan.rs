//! Fingerprint scan of a bucket row: the positions of every slot equal to a fingerprint.
//!
//! The row of a bucket holds the slots of every partition of a segment back to back, so a
//! query is a linear scan over a few hundred kilobytes; this is the hot loop. x86_64 uses
//! AVX2 or SSE2 (selected once at run time); other targets use the portable loop.

/// An implementation of the row scan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanImpl {
    /// Plain Rust, any target.
    Portable,
    /// 128-bit SSE2 compares (x86_64 only).
    Sse2,
    /// 256-bit AVX2 compares (x86_64 only).
    Avx2,
}

impl ScanImpl {
    /// The fastest implementation this CPU supports.
    pub fn best() -> ScanImpl {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2") {
                return ScanImpl::Avx2;
            }
            if std::arch::is_x86_feature_detected!("sse2") {
                return ScanImpl::Sse2;
            }
        }
        ScanImpl::Portable
    }

    /// Whether this CPU can run the implementation.
    pub fn supported(self) -> bool {
        match self {
            ScanImpl::Portable => true,
            #[cfg(target_arch = "x86_64")]
            ScanImpl::Sse2 => std::arch::is_x86_feature_detected!("sse2"),
            #[cfg(target_arch = "x86_64")]
            ScanImpl::Avx2 => std::arch::is_x86_feature_detected!("avx2"),
            #[cfg(not(target_arch = "x86_64"))]
            _ => false,
        }
    }

    /// Appends to `out` the slot index of every slot of `row` (little-endian fingerprints of
    /// `width` bytes: 1, 2 or 4) that equals `fp`, in increasing order.
    ///
    /// Panics if the implementation is not [`supported`](Self::supported).
    pub fn scan(self, row: &[u8], width: usize, fp: u32, out: &mut Vec<u32>) {
        debug_assert!(row.len().is_multiple_of(width));
        match self {
            ScanImpl::Portable => portable(row, width, fp, out),
            #[cfg(target_arch = "x86_64")]
            ScanImpl::Sse2 => {
                assert!(self.supported());
                // SAFETY: SSE2 presence was checked above.
                unsafe { x86::scan_sse2(row, width, fp, out) }
            }
            #[cfg(target_arch = "x86_64")]
            ScanImpl::Avx2 => {
                assert!(self.supported());
                // SAFETY: AVX2 presence was checked above.
                unsafe { x86::scan_avx2(row, width, fp, out) }
            }
            #[cfg(not(target_arch = "x86_64"))]
            _ => panic!("scan implementation {self:?} not available on this target"),
        }
    }
}

/// The portable scan, also used for the tails of the SIMD scans.
pub fn portable(row: &[u8], width: usize, fp: u32, out: &mut Vec<u32>) {
    portable_from(row, width, fp, 0, out)
}

fn portable_from(row: &[u8], width: usize, fp: u32, start_slot: usize, out: &mut Vec<u32>) {
    let tail = &row[start_slot * width..];
    match width {
        1 => scan_blocks(tail, start_slot, out, |c| c[0] as u32, fp, 1),
        2 => scan_blocks(
            tail,
            start_slot,
            out,
            |c| u16::from_le_bytes([c[0], c[1]]) as u32,
            fp,
            2,
        ),
        4 => scan_blocks(
            tail,
            start_slot,
            out,
            |c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]),
            fp,
            4,
        ),
        _ => panic!("fingerprint width {width} bytes not supported"),
    }
}

/// Branch-free "any match" test per 64-byte block (which compilers vectorize for any
/// target), then a slot-by-slot pass over the rare block that has a match.
#[inline(always)]
fn scan_blocks(
    bytes: &[u8],
    start_slot: usize,
    out: &mut Vec<u32>,
    get: impl Fn(&[u8]) -> u32,
    fp: u32,
    width: usize,
) {
    let mut blocks = bytes.chunks_exact(64);
    let per = 64 / width;
    let mut slot = start_slot;
    for b in blocks.by_ref() {
        if b.chunks_exact(width)
            .fold(false, |acc, c| acc | (get(c) == fp))
        {
            for (i, c) in b.chunks_exact(width).enumerate() {
                if get(c) == fp {
                    out.push((slot + i) as u32);
                }
            }
        }
        slot += per;
    }
    for (i, c) in blocks.remainder().chunks_exact(width).enumerate() {
        if get(c) == fp {
            out.push((slot + i) as u32);
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    /// Pushes the slots flagged in a byte mask (`width` mask bits per slot) of a block that
    /// starts at slot `base`.
    #[inline(always)]
    fn push_mask(mut mask: u64, width: usize, base: usize, out: &mut Vec<u32>) {
        while mask != 0 {
            let bit = mask.trailing_zeros() as usize;
            out.push((base + bit / width) as u32);
            // Clear every mask bit of this slot (one per byte of the lane).
            let lane_bits = ((1u128 << width) - 1) as u64;
            mask &= !(lane_bits << (bit - bit % width));
        }
    }

    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn scan_avx2(row: &[u8], width: usize, fp: u32, out: &mut Vec<u32>) {
        let needle = match width {
            1 => _mm256_set1_epi8(fp as u8 as i8),
            2 => _mm256_set1_epi16(fp as u16 as i16),
            _ => _mm256_set1_epi32(fp as i32),
        };
        let cmp = |v: __m256i| match width {
            1 => _mm256_cmpeq_epi8(v, needle),
            2 => _mm256_cmpeq_epi16(v, needle),
            _ => _mm256_cmpeq_epi32(v, needle),
        };
        let n = row.len();
        let p = row.as_ptr();
        let mut off = 0usize;
        // 128 bytes per step; the rare block with a match is resolved lane by lane.
        while off + 128 <= n {
            // SAFETY: off + 128 <= n, unaligned loads.
            let (a, b, c, d) = unsafe {
                (
                    cmp(_mm256_loadu_si256(p.add(off) as *const __m256i)),
                    cmp(_mm256_loadu_si256(p.add(off + 32) as *const __m256i)),
                    cmp(_mm256_loadu_si256(p.add(off + 64) as *const __m256i)),
                    cmp(_mm256_loadu_si256(p.add(off + 96) as *const __m256i)),
                )
            };
            let any = _mm256_or_si256(_mm256_or_si256(a, b), _mm256_or_si256(c, d));
            if _mm256_testz_si256(any, any) == 0 {
                for (k, v) in [a, b, c, d].into_iter().enumerate() {
                    let m = _mm256_movemask_epi8(v) as u32 as u64;
                    push_mask(m, width, (off + 32 * k) / width, out);
                }
            }
            off += 128;
        }
        while off + 32 <= n {
            // SAFETY: off + 32 <= n.
            let v = cmp(unsafe { _mm256_loadu_si256(p.add(off) as *const __m256i) });
            let m = _mm256_movemask_epi8(v) as u32 as u64;
            push_mask(m, width, off / width, out);
            off += 32;
        }
        super::portable_from(row, width, fp, off / width, out);
    }

    #[target_feature(enable = "sse2")]
    pub(super) unsafe fn scan_sse2(row: &[u8], width: usize, fp: u32, out: &mut Vec<u32>) {
        let needle = match width {
            1 => _mm_set1_epi8(fp as u8 as i8),
            2 => _mm_set1_epi16(fp as u16 as i16),
            _ => _mm_set1_epi32(fp as i32),
        };
        let cmp = |v: __m128i| match width {
            1 => _mm_cmpeq_epi8(v, needle),
            2 => _mm_cmpeq_epi16(v, needle),
            _ => _mm_cmpeq_epi32(v, needle),
        };
        let n = row.len();
        let p = row.as_ptr();
        let mut off = 0usize;
        while off + 64 <= n {
            // SAFETY: off + 64 <= n, unaligned loads.
            let (a, b, c, d) = unsafe {
                (
                    cmp(_mm_loadu_si128(p.add(off) as *const __m128i)),
                    cmp(_mm_loadu_si128(p.add(off + 16) as *const __m128i)),
                    cmp(_mm_loadu_si128(p.add(off + 32) as *const __m128i)),
                    cmp(_mm_loadu_si128(p.add(off + 48) as *const __m128i)),
                )
            };
            let any = _mm_or_si128(_mm_or_si128(a, b), _mm_or_si128(c, d));
            if _mm_movemask_epi8(any) != 0 {
                for (k, v) in [a, b, c, d].into_iter().enumerate() {
                    let m = _mm_movemask_epi8(v) as u32 as u64;
                    push_mask(m, width, (off + 16 * k) / width, out);
                }
            }
            off += 64;
        }
        super::portable_from(row, width, fp, off / width, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_implementations_agree() {
        let mut st = 1u64;
        for width in [1usize, 2, 4] {
            for len_slots in [0usize, 1, 15, 16, 31, 64, 65, 200, 1001] {
                let mut row = vec![0u8; len_slots * width];
                for b in row.iter_mut() {
                    // Few distinct values so matches are frequent.
                    *b = (crate::filter::next(&mut st) % 3) as u8;
                }
                for fp in [0u32, 1, 2, 0x0101, 0x0201_0102] {
                    let fp = match width {
                        1 => fp & 0xFF,
                        2 => fp & 0xFFFF,
                        _ => fp,
                    };
                    let mut want = Vec::new();
                    portable(&row, width, fp, &mut want);
                    for imp in [ScanImpl::Sse2, ScanImpl::Avx2, ScanImpl::best()] {
                        if !imp.supported() {
                            continue;
                        }
                        let mut got = Vec::new();
                        imp.scan(&row, width, fp, &mut got);
                        assert_eq!(
                            got, want,
                            "{imp:?} width {width} len {len_slots} fp {fp:#x}"
                        );
                    }
                }
            }
        }
    }
}
