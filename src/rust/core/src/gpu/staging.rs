//! Page-locked ("pinned") host memory for the chunks of the cuda-batched
//! engine: a chunk's observations, their fp32 copy and its fits' starting
//! values are packed straight into it and uploaded from it. An upload from
//! ordinary (pageable) memory goes through the driver's own staging copy,
//! where the workers' uploads queue behind one another: on an H200 host,
//! four workers each filling and uploading 40 MB took 36 ms from fresh
//! ordinary memory and 6 ms from reused pinned buffers
//! (inst/bench/results-engines-gpu.md). Pinning is slow (13-23 ms per 40 MB
//! there), so buffers are kept for the session and reused by later chunks
//! and calls. A request that finds no free buffer large enough gets
//! ordinary memory, as before, and a buffer of its size is pinned for the
//! next call, in the background once this one's engine is done
//! (`pin_wanted`): pinned while the workers ran, the driver made their
//! uploads wait (B2's engine 0.377 s instead of 0.30). Buffers are bounded
//! (MAX_BUFFER_BYTES each, MAX_TOTAL_BYTES per GPU) and, once pinned, kept:
//! requests larger than every free buffer once the bound is reached get
//! ordinary memory, as larger ones always do.

use std::ops::{Deref, DerefMut};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex, PoisonError};

use cudarc::driver::{CudaContext, PinnedHostSlice};

/// Largest buffer pinned: a chunk of B2 (2,500 datasets of 1,000
/// observations) packs 40 MB of observations.
const MAX_BUFFER_BYTES: usize = 128 << 20;
/// Most memory pinned per GPU, free or in use (four workers with three
/// buffers each take several times a chunk's observations).
const MAX_TOTAL_BYTES: usize = 768 << 20;
/// Pinned sizes are rounded up to this, so that chunks of about the same
/// size share buffers.
const GRAIN: usize = 1 << 20;

/// The pinned buffers of one GPU.
pub struct Staging {
    ctx: Arc<CudaContext>,
    pool: Mutex<Pool>,
}

#[derive(Default)]
struct Pool {
    free: Vec<PinnedHostSlice<u8>>,
    /// Sizes to pin once the call's engine is done.
    wanted: Vec<usize>,
    /// Bytes pinned (free, in use, wanted or being pinned).
    total: usize,
}

/// `len` values of T in host memory: a pinned buffer of the pool (returned to
/// it on drop) or an ordinary vector. Pinned contents are whatever an
/// earlier user left (initialised: zero when first pinned); callers write
/// every value they upload. Uploads from it and downloads into it are
/// synchronised before it is dropped (device::run, device::gather); only
/// when a chunk fails part-way may a copy still be using it as it returns
/// to the pool: reading it into that abandoned chunk's device memory, or,
/// for a download whose synchronisation failed, writing it after a failure
/// of the stream that leaves the call failed.
pub struct HostBuf<T> {
    inner: Inner<T>,
}

enum Inner<T> {
    Ordinary(Vec<T>),
    Pinned { buf: Option<PinnedHostSlice<u8>>, ptr: *mut T, len: usize, pool: Arc<Staging> },
}

// SAFETY: the pinned variant owns its buffer exclusively (taken out of the
// pool) and `ptr` points into it; it is used like a Vec<T>.
unsafe impl<T: Send> Send for HostBuf<T> {}
// SAFETY: shared references only read through `ptr`, as for a Vec<T>.
unsafe impl<T: Sync> Sync for HostBuf<T> {}

impl<T: Copy + Default> HostBuf<T> {
    /// `len` values in ordinary memory, T::default() each.
    pub fn ordinary(len: usize) -> HostBuf<T> {
        HostBuf { inner: Inner::Ordinary(vec![T::default(); len]) }
    }

    /// `len` values from `staging`'s pool (see `Staging::take`), or in
    /// ordinary memory without one.
    pub fn take(staging: Option<&Arc<Staging>>, len: usize) -> HostBuf<T> {
        staging.map_or_else(|| HostBuf::ordinary(len), |s| s.take(len))
    }

    pub fn is_pinned(&self) -> bool {
        matches!(self.inner, Inner::Pinned { .. })
    }
}

impl<T> Deref for HostBuf<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        match &self.inner {
            Inner::Ordinary(v) => v,
            // SAFETY: ptr is the start of a live pinned buffer of at least
            // len * size_of::<T>() initialised bytes, aligned for T (pinned
            // buffers are page aligned), owned by this HostBuf.
            Inner::Pinned { ptr, len, .. } => unsafe { std::slice::from_raw_parts(*ptr, *len) },
        }
    }
}

impl<T> DerefMut for HostBuf<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        match &mut self.inner {
            Inner::Ordinary(v) => v,
            // SAFETY: as in deref, and &mut self makes the access exclusive.
            Inner::Pinned { ptr, len, .. } => unsafe { std::slice::from_raw_parts_mut(*ptr, *len) },
        }
    }
}

impl<T> Drop for HostBuf<T> {
    fn drop(&mut self) {
        if let Inner::Pinned { buf, pool, .. } = &mut self.inner {
            if let Some(buf) = buf.take() {
                pool.lock().free.push(buf);
            }
        }
    }
}

impl Staging {
    pub fn new(ctx: Arc<CudaContext>) -> Arc<Staging> {
        Arc::new(Staging { ctx, pool: Mutex::new(Pool::default()) })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Pool> {
        self.pool.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `len` values of T: the smallest free pinned buffer that holds them,
    /// or else ordinary memory (T::default() each), a buffer of this size
    /// then being wanted (see `pin_wanted`) when the bounds allow.
    pub fn take<T: Copy + Default>(self: &Arc<Self>, len: usize) -> HostBuf<T> {
        let bytes = len.saturating_mul(std::mem::size_of::<T>());
        if bytes == 0 || bytes > MAX_BUFFER_BYTES {
            return HostBuf::ordinary(len);
        }
        let mut pool = self.lock();
        let fits = (0..pool.free.len())
            .filter(|&i| pool.free[i].num_bytes() >= bytes)
            .min_by_key(|&i| pool.free[i].num_bytes());
        if let Some(i) = fits {
            let mut buf = pool.free.swap_remove(i);
            drop(pool);
            // the pointer of a buffer whose pinning this process did; no
            // copy from it is pending (uploads are synchronised before the
            // HostBuf that held it is dropped)
            if let Ok(ptr) = buf.as_mut_ptr() {
                return HostBuf {
                    inner: Inner::Pinned { buf: Some(buf), ptr: ptr as *mut T, len, pool: self.clone() },
                };
            }
            self.lock().total -= buf.num_bytes();
            return HostBuf::ordinary(len);
        }
        // Nothing pinned is unpinned to make room: where calls overlap (the
        // bootstrap runs several engine calls at once) that churned, each
        // call's sizes evicting another's, and pinning while other calls
        // upload makes them wait (see the module docs).
        let size = bytes.div_ceil(GRAIN) * GRAIN;
        if pool.total + size <= MAX_TOTAL_BYTES {
            pool.total += size;
            pool.wanted.push(size);
        }
        HostBuf::ordinary(len)
    }

    /// Pins the buffers `take` wanted, one after another on a thread of
    /// their own: called when a call's engine is done with the GPU.
    pub fn pin_wanted(self: &Arc<Self>) {
        let wanted = std::mem::take(&mut self.lock().wanted);
        if wanted.is_empty() {
            return;
        }
        let me = self.clone();
        let sizes = wanted.clone();
        let spawned = std::thread::Builder::new()
            .name("bulkem-pin".into())
            .spawn(move || sizes.into_iter().for_each(|size| me.pin(size)));
        if spawned.is_err() {
            self.lock().total -= wanted.iter().sum::<usize>();
        }
    }

    /// Pins a zeroed buffer of `size` bytes into the pool (its bytes are
    /// already counted in `total`), or uncounts them if the driver refuses.
    fn pin(&self, size: usize) {
        let pinned = catch_unwind(AssertUnwindSafe(|| -> Option<PinnedHostSlice<u8>> {
            self.ctx.bind_to_thread().ok()?;
            // SAFETY: the bytes are set just below, before any use
            let mut buf = unsafe { self.ctx.alloc_pinned_with_flags::<u8>(size, 0) }.ok()?;
            buf.as_mut_slice().ok()?.fill(0);
            Some(buf)
        }));
        let mut pool = self.lock();
        match pinned {
            Ok(Some(buf)) => pool.free.push(buf),
            _ => pool.total -= size,
        }
    }

    /// Bytes pinned and free now.
    #[cfg(test)]
    fn free_bytes(&self) -> usize {
        self.lock().free.iter().map(|b| b.num_bytes()).sum()
    }

    /// Bytes pinned, free or in use, or being pinned: what bulkem holds of
    /// the host's memory for this GPU (bulkem_gpu_info()).
    pub fn pinned_bytes(&self) -> usize {
        let pool = self.lock();
        pool.total - pool.wanted.iter().sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Needs a GPU; says it skipped otherwise.
    #[test]
    fn requests_are_served_pinned_once_a_buffer_is_pinned_and_buffers_come_back() {
        let Ok(gpu) = crate::gpu::gpu() else {
            eprintln!("skipped: no usable GPU");
            return;
        };
        let staging = Staging::new(gpu.ctx.clone());
        // nothing pinned yet: ordinary memory, and a buffer pinned meanwhile
        let first: HostBuf<f64> = staging.take(1000);
        assert!(!first.is_pinned());
        assert_eq!(&first[..], &[0.0; 1000][..]);
        assert_eq!(staging.free_bytes(), 0);
        staging.pin_wanted();
        let waited = std::time::Instant::now();
        while staging.free_bytes() < GRAIN && waited.elapsed().as_secs() < 10 {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(staging.free_bytes(), GRAIN);
        // served from it, as any type, written and read like a vector
        let mut second: HostBuf<f32> = staging.take(3000);
        assert!(second.is_pinned());
        assert_eq!(second.len(), 3000);
        second.iter_mut().enumerate().for_each(|(i, v)| *v = i as f32);
        assert!(second.iter().enumerate().all(|(i, &v)| v == i as f32));
        assert_eq!(staging.free_bytes(), 0);
        drop(second);
        assert_eq!(staging.free_bytes(), GRAIN);
        // too large to pin, or empty: ordinary memory, nothing pinned for it
        let big: HostBuf<u8> = staging.take(MAX_BUFFER_BYTES + 1);
        assert!(!big.is_pinned() && big.len() == MAX_BUFFER_BYTES + 1);
        let empty: HostBuf<f64> = staging.take(0);
        assert!(!empty.is_pinned() && empty.is_empty());
        assert_eq!(staging.lock().total, GRAIN);
        assert_eq!(staging.pinned_bytes(), GRAIN);
        // a request larger than every free buffer pins one of its size
        let third: HostBuf<f64> = staging.take(GRAIN / 8 + 1);
        assert!(!third.is_pinned());
        staging.pin_wanted();
        let waited = std::time::Instant::now();
        while staging.free_bytes() < 3 * GRAIN && waited.elapsed().as_secs() < 10 {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(staging.lock().total, 3 * GRAIN);
        let fourth: HostBuf<f64> = staging.take(GRAIN / 8 + 1);
        assert!(fourth.is_pinned());
    }
}
