//! The CUDA C sources (kernels/*.cu, embedded in the binary), compiled once by
//! NVRTC for the device's compute capability, and one typed launch function
//! per kernel whose arguments mirror the kernel's signature.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use cudarc::driver::{CudaContext, CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use cudarc::nvrtc::{compile_ptx_with_opts, CompileError, CompileOptions};

use super::{contained, fault_injected};
use crate::job::Family;

/// Concatenated so NVRTC needs no include path.
const COMMON: &str = include_str!("../../kernels/em_common.cuh");
const STREAMS: &str = include_str!("../../kernels/em_streams.cu");
/// Templates only: each (family, K) instance is compiled when first needed,
/// since compiling all sixteen costs seconds.
const BATCHED: &str = include_str!("../../kernels/em_batched.cu");

pub static COMPILATIONS: AtomicUsize = AtomicUsize::new(0);

/// Threads per block of em_obs_terms.
pub const OBS_THREADS: u32 = 256;
/// Must equal SUM_THREADS in em_streams.cu.
pub const SUM_THREADS: u32 = 256;

pub struct Kernels {
    ctx: Arc<CudaContext>,
    arch: String,
    obs_terms: CudaFunction,
    fused_sum: CudaFunction,
    batched: Mutex<HashMap<(Family, usize, bool), Batched>>,
}

/// The two mappings of em_batched.cu for one (family, K).
#[derive(Clone)]
pub struct Batched {
    pub lane: CudaFunction,
    pub warp: CudaFunction,
    pub gather: CudaFunction,
}

/// Compiles `source` with NVRTC for `arch` and loads the named kernels.
fn build(ctx: &Arc<CudaContext>, arch: &str, source: String, names: &[&str]) -> Result<Vec<CudaFunction>, String> {
    let mut source = source;
    if fault_injected("compile") {
        source.push_str("\n#error fault injected by BULKEM_CUDA_FAULT=compile\n");
    }
    let opts = CompileOptions {
        options: vec![format!("--gpu-architecture={arch}"), "--std=c++17".into()],
        name: Some("bulkem_kernels.cu".into()),
        ..Default::default()
    };
    COMPILATIONS.fetch_add(1, Ordering::Relaxed);
    let ptx = compile_ptx_with_opts(source, opts).map_err(|e| match e {
        CompileError::CompileError { log, .. } => {
            format!("NVRTC could not compile bulkem's kernels:\n{}", log.to_string_lossy())
        }
        other => format!("NVRTC failed: {other:?}"),
    })?;
    let module = ctx.load_module(ptx).map_err(|e| format!("loading the compiled kernels failed: {e:?}"))?;
    names
        .iter()
        .map(|name| module.load_function(name).map_err(|e| format!("kernel {name} missing: {e:?}")))
        .collect()
}

impl Kernels {
    pub fn compile(ctx: &Arc<CudaContext>, (major, minor): (i32, i32)) -> Result<Kernels, String> {
        let arch = format!("compute_{major}{minor}");
        let mut f = build(ctx, &arch, format!("{COMMON}{STREAMS}"), &["em_obs_terms", "em_fused_sum"])?.into_iter();
        let (Some(obs_terms), Some(fused_sum)) = (f.next(), f.next()) else {
            return Err("kernels missing after compilation".into());
        };
        Ok(Kernels { ctx: ctx.clone(), arch, obs_terms, fused_sum, batched: Mutex::new(HashMap::new()) })
    }

    /// The em_batched kernels for (family, k, mixed precision), compiled on
    /// first use.
    pub fn batched(&self, family: Family, k: usize, mixed: bool) -> Result<Batched, String> {
        let mut cache = self.batched.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(f) = cache.get(&(family, k, mixed)) {
            return Ok(f.clone());
        }
        let ig = (family == Family::InvGauss) as i32;
        let source = format!("{COMMON}{BATCHED}\nEM_BATCHED({k}, {ig}, {})\n", mixed as i32);
        let names = ["em_batched_lane", "em_batched_warp", "gather_rows"];
        let mut f = contained("compiling em_batched", || build(&self.ctx, &self.arch, source, &names))?.into_iter();
        let (Some(lane), Some(warp), Some(gather)) = (f.next(), f.next(), f.next()) else {
            return Err("em_batched missing after compilation".into());
        };
        let b = Batched { lane, warp, gather };
        cache.insert((family, k, mixed), b.clone());
        Ok(b)
    }

    /// em_obs_terms over `starts` active starts of a dataset of `n` observations.
    #[allow(clippy::too_many_arguments)]
    pub fn obs_terms(
        &self,
        stream: &CudaStream,
        x: &CudaSlice<f64>,
        g: &CudaSlice<f64>,
        n: usize,
        k: usize,
        invgauss: bool,
        terms: &CudaSlice<f64>,
        per_obs: &mut CudaSlice<f64>,
        starts: usize,
    ) -> Result<(), String> {
        let blocks = (n as u32).div_ceil(OBS_THREADS);
        let cfg = LaunchConfig {
            grid_dim: (if fault_injected("launch") { 0 } else { blocks }, starts as u32, 1),
            block_dim: (OBS_THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let (n, k, ig) = (n as i32, k as i32, invgauss as i32);
        // SAFETY: arguments match em_obs_terms(x, g, n, k, invgauss, terms,
        // per_obs) in order and type; x and g hold n values, terms holds
        // 3 * MAX_COMPONENTS per start and per_obs (1 + 3k) * n per start, for
        // `starts` starts (checked by the caller's buffer sizing).
        let launched = contained("launching em_obs_terms", || {
            unsafe {
                stream
                    .launch_builder(&self.obs_terms)
                    .arg(x)
                    .arg(g)
                    .arg(&n)
                    .arg(&k)
                    .arg(&ig)
                    .arg(terms)
                    .arg(per_obs)
                    .launch(cfg)
            }
            .map(|_| ())
            .map_err(|e| format!("launching em_obs_terms failed: {e:?}"))
        });
        launched
    }

    /// em_fused_sum: all `rows` sums of `starts` starts in one launch.
    pub fn fused_sum(
        &self,
        stream: &CudaStream,
        per_obs: &CudaSlice<f64>,
        n: usize,
        rows: usize,
        sums: &mut CudaSlice<f64>,
        starts: usize,
    ) -> Result<(), String> {
        let cfg = LaunchConfig { grid_dim: (starts as u32, 1, 1), block_dim: (SUM_THREADS, 1, 1), shared_mem_bytes: 0 };
        let (n, rows) = (n as i32, rows as i32);
        // SAFETY: arguments match em_fused_sum(per_obs, n, rows, sums); per_obs
        // holds rows * n values per start and sums rows per start.
        contained("launching em_fused_sum", || {
            unsafe { stream.launch_builder(&self.fused_sum).arg(per_obs).arg(&n).arg(&rows).arg(sums).launch(cfg) }
                .map(|_| ())
                .map_err(|e| format!("launching em_fused_sum failed: {e:?}"))
        })
    }
}
