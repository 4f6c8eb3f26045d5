//! CUDA at run time. Nothing here links CUDA: cudarc opens libcuda and
//! libnvrtc with dlopen on first use, and panics if they are missing, so the
//! libraries are probed first and every cudarc call runs inside
//! `contained`, which turns a panic into an error. The context and the
//! compiled kernels are made once per process and shared by every call.

pub mod kernels;
pub mod prelude;
pub mod staging;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, OnceLock};

use cudarc::driver::CudaContext;

use crate::error::{panic_message, Unavailable};
pub use kernels::Kernels;
use staging::Staging;

/// Parts of CUDA to behave as if they failed (`no-driver`, `no-nvrtc`,
/// `compile`, `oom`, `launch`), so the fallbacks can be tested on any
/// machine. Process-wide, as the GPU state they guard is: the glue sets them
/// once, from `BULKEM_CUDA_FAULT`, before anything uses a GPU.
static FAULTS: OnceLock<Vec<String>> = OnceLock::new();

/// Sets the injected faults, a comma-separated list; only the first call of
/// a process counts.
pub fn inject_faults(list: &str) {
    let _ = FAULTS.set(list.split(',').map(|f| f.trim().to_string()).filter(|f| !f.is_empty()).collect());
}

pub fn fault_injected(which: &str) -> bool {
    FAULTS.get().is_some_and(|f| f.iter().any(|x| x == which))
}

/// One GPU a CUDA engine uses: its ordinal, context and kernels.
pub struct Gpu {
    pub ordinal: usize,
    pub ctx: Arc<CudaContext>,
    pub name: String,
    pub compute_capability: (i32, i32),
    pub total_memory: usize,
    pub kernels: Kernels,
    /// Pinned host buffers chunks are packed into (staging.rs).
    pub staging: Arc<Staging>,
}

/// What `bulkem_gpu_info()` shows a user.
#[derive(Clone, Debug)]
pub struct GpuReport {
    pub driver_found: bool,
    pub nvrtc_found: bool,
    pub devices: Vec<DeviceReport>,
    /// `Ok` if bulkem can run its CUDA engines; otherwise why not.
    pub usable: Result<(), Unavailable>,
}

#[derive(Clone, Debug)]
pub struct DeviceReport {
    pub name: String,
    pub compute_capability: (i32, i32),
    pub total_memory: usize,
    pub free_memory: usize,
    /// Host memory bulkem keeps pinned for it (staging.rs); 0 before its
    /// first use.
    pub pinned: usize,
}

/// How many times this process compiled the kernels (1 once a GPU engine ran:
/// later calls reuse them).
pub fn compilations() -> usize {
    kernels::COMPILATIONS.load(std::sync::atomic::Ordering::Relaxed)
}

/// Each GPU of the machine, set up on its first use; the slots themselves
/// are made once, when the driver is first asked how many GPUs there are.
static GPUS: OnceLock<Result<Vec<GpuSlot>, Unavailable>> = OnceLock::new();

/// One GPU's slot: set up on first use, or why it cannot be.
type GpuSlot = OnceLock<Result<Arc<Gpu>, Unavailable>>;

/// The machine's first GPU: what `gpu_devices(&[])` starts with.
pub fn gpu() -> Result<Arc<Gpu>, Unavailable> {
    device(0)
}

/// GPU `ordinal`, set up on first use (libraries probed, context made,
/// kernels compiled by NVRTC for its compute capability); later calls reuse it.
pub fn device(ordinal: usize) -> Result<Arc<Gpu>, Unavailable> {
    let slots = GPUS
        .get_or_init(|| count().map(|n| (0..n).map(|_| OnceLock::new()).collect()))
        .as_ref()
        .map_err(Clone::clone)?;
    let slot = slots.get(ordinal).ok_or(Unavailable::NoDevice)?;
    slot.get_or_init(|| init(ordinal).map(Arc::new)).clone()
}

/// How many GPUs the driver lists (0 gives `NoDevice` on use).
pub fn device_count() -> Result<usize, Unavailable> {
    match GPUS.get_or_init(|| count().map(|n| (0..n).map(|_| OnceLock::new()).collect())) {
        Ok(slots) => Ok(slots.len()),
        Err(why) => Err(why.clone()),
    }
}

/// The GPUs named by `ordinals` (every GPU when empty), each set up.
pub fn gpu_devices(ordinals: &[usize]) -> Result<Vec<Arc<Gpu>>, Unavailable> {
    let all: Vec<usize> = if ordinals.is_empty() { (0..device_count()?).collect() } else { ordinals.to_vec() };
    if all.is_empty() {
        return Err(Unavailable::NoDevice);
    }
    all.into_iter().map(device).collect()
}

fn count() -> Result<usize, Unavailable> {
    driver_present()?;
    nvrtc_present()?;
    contained("setting up CUDA", || {
        CudaContext::device_count().map_err(|e| format!("the CUDA driver failed to start: {e:?}"))
    })
    .map_err(Unavailable::Setup)
    .map(|n| n.max(0) as usize)
}

/// Runs `f`, turning a panic inside cudarc into an error that says `what`
/// was being done.
pub fn contained<T>(what: &str, f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| Err(format!("{what}: {}", panic_message(p.as_ref()))))
}

fn driver_present() -> Result<(), Unavailable> {
    // SAFETY: only attempts dlopen of the candidate library names.
    if fault_injected("no-driver") || !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err(Unavailable::NoDriver);
    }
    Ok(())
}

fn nvrtc_present() -> Result<(), Unavailable> {
    // SAFETY: only attempts dlopen of the candidate library names.
    if fault_injected("no-nvrtc") || !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return Err(Unavailable::NoCompiler);
    }
    Ok(())
}

fn init(ordinal: usize) -> Result<Gpu, Unavailable> {
    contained("setting up CUDA", || open(ordinal)).map_err(Unavailable::Setup)
}

/// GPU `ordinal` with its context and kernels.
fn open(ordinal: usize) -> Result<Gpu, String> {
    let ctx = CudaContext::new(ordinal).map_err(|e| format!("could not open GPU {ordinal}: {e:?}"))?;
    let compute_capability = ctx.compute_capability().map_err(|e| format!("{e:?}"))?;
    let name = ctx.name().unwrap_or_else(|_| "unknown GPU".into());
    let total_memory = ctx.total_mem().unwrap_or(0);
    // cudarc's event tracking orders every buffer's use across streams. Each
    // worker's buffers are used by its own stream alone, so that ordering is
    // pure overhead there; the two exceptions are deliberate and must NOT be
    // ordered: cuda-batched reads a running kernel's fit-queue counter and
    // writes its stop flag through a side stream while the kernel runs (the
    // protocol of engine/cuda_batched/device.rs and em_batched.cu).
    // SAFETY: every other buffer is used by one stream only (see the
    // engines); the two shared words are read by the kernel as atomic
    // (counter) and volatile (flag), so any interleaving is correct.
    unsafe { ctx.disable_event_tracking() };
    let kernels = Kernels::compile(&ctx, compute_capability)?;
    let staging = Staging::new(ctx.clone());
    Ok(Gpu { ordinal, ctx, name, compute_capability, total_memory, kernels, staging })
}

/// Host memory pinned for GPU `ordinal` if it has been set up (staging.rs).
fn pinned_bytes(ordinal: usize) -> usize {
    let set_up = GPUS.get().and_then(|g| g.as_ref().ok()).and_then(|slots| slots.get(ordinal)).and_then(OnceLock::get);
    set_up.and_then(|g| g.as_ref().ok()).map_or(0, |g| g.staging.pinned_bytes())
}

/// Everything bulkem can tell about CUDA on this machine, without failing.
pub fn report() -> GpuReport {
    let mut r = GpuReport {
        driver_found: driver_present().is_ok(),
        nvrtc_found: nvrtc_present().is_ok(),
        devices: Vec::new(),
        usable: Ok(()),
    };
    if r.driver_found {
        r.devices = contained("listing GPUs", || {
            let n = CudaContext::device_count().map_err(|e| format!("{e:?}"))?;
            Ok((0..n.max(0) as usize)
                .filter_map(|i| {
                    let ctx = CudaContext::new(i).ok()?;
                    Some(DeviceReport {
                        name: ctx.name().unwrap_or_default(),
                        compute_capability: ctx.compute_capability().unwrap_or((0, 0)),
                        total_memory: ctx.total_mem().unwrap_or(0),
                        free_memory: ctx.mem_get_info().map_or(0, |(free, _)| free),
                        pinned: pinned_bytes(i),
                    })
                })
                .collect())
        })
        .unwrap_or_default();
    }
    r.usable = gpu().map(|_| ());
    r
}
