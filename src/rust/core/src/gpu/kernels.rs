//! The CUDA C sources (kernels/*.cu, embedded in the binary), compiled once by
//! NVRTC for the device's compute capability, and one typed launch function
//! per kernel whose arguments mirror the kernel's signature.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use cudarc::driver::{CudaContext, CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use cudarc::nvrtc::{compile_ptx_with_opts, CompileError, CompileOptions};

use super::prelude::{prelude, SUM_THREADS};
use super::{contained, fault_injected};
use crate::params::Family;

/// Concatenated so NVRTC needs no include path.
const COMMON: &str = include_str!("../../kernels/em_common.cuh");
const STREAMS: &str = include_str!("../../kernels/em_streams.cu");
/// The special functions (log Γ, digamma, the gamma's shape, t's ν root)
/// em_batched and em_mv share.
const SPECIAL: &str = include_str!("../../kernels/special.cuh");
/// Templates only: each (family, K) instance is compiled when first needed,
/// since compiling all sixteen costs seconds.
const BATCHED: &str = include_str!("../../kernels/em_batched.cu");
/// Multivariate fits (mv/): a template per (K, d, covariance structure),
/// compiled when first needed.
const MV: &str = include_str!("../../kernels/em_mv.cu");
/// Most variables em_mv is compiled for (its state grows with d²).
pub const MV_MAX_VARIABLES: usize = 10;

pub static COMPILATIONS: AtomicUsize = AtomicUsize::new(0);

/// Threads per block of em_obs_terms.
pub const OBS_THREADS: u32 = 256;
/// Largest grid y (and z) dimension CUDA allows.
pub const MAX_GRID_Y: usize = 65_535;
pub use super::prelude::TERMS_PER_START;

/// `v` as a kernel's `int`, or an error naming `what`: sizes are never
/// truncated on their way to a kernel.
pub fn as_int(v: usize, what: &str) -> Result<i32, String> {
    i32::try_from(v).map_err(|_| format!("{what} ({v}) exceeds the GPU kernels' limit of {}", i32::MAX))
}

pub struct Kernels {
    ctx: Arc<CudaContext>,
    arch: String,
    obs_terms: CudaFunction,
    fused_sum: CudaFunction,
    batched: Mutex<HashMap<BatchedKey, Batched>>,
    mv: Mutex<HashMap<MvKey, CudaFunction>>,
}

/// What an em_mv instance is compiled for: (K, d, covariance structure, a
/// noise component, the components' family, weighted observations).
type MvKey = (usize, usize, i32, bool, i32, bool);

/// What an em_batched instance is compiled for: (family, K, mixed
/// precision, SQUAREM, a noise component).
type BatchedKey = (Family, usize, bool, bool, bool, bool);

/// The two mappings of em_batched.cu for one (family, K).
#[derive(Clone)]
pub struct Batched {
    pub lane: CudaFunction,
    pub group: CudaFunction,
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
    names.iter().map(|name| module.load_function(name).map_err(|e| format!("kernel {name} missing: {e:?}"))).collect()
}

impl Kernels {
    pub fn compile(ctx: &Arc<CudaContext>, (major, minor): (i32, i32)) -> Result<Kernels, String> {
        let arch = format!("compute_{major}{minor}");
        let mut f = build(ctx, &arch, format!("{}{COMMON}{STREAMS}", prelude()), &["em_obs_terms", "em_fused_sum"])?
            .into_iter();
        let (Some(obs_terms), Some(fused_sum)) = (f.next(), f.next()) else {
            return Err("kernels missing after compilation".into());
        };
        Ok(Kernels {
            ctx: ctx.clone(),
            arch,
            obs_terms,
            fused_sum,
            batched: Mutex::new(HashMap::new()),
            mv: Mutex::new(HashMap::new()),
        })
    }

    /// The em_batched kernels for (family, k, mixed precision, SQUAREM, a
    /// noise component, weights), compiled on first use.
    pub fn batched(
        &self,
        family: Family,
        k: usize,
        mixed: bool,
        accelerate: bool,
        noise: bool,
        weights: bool,
    ) -> Result<Batched, String> {
        let mut cache = self.batched.lock().unwrap_or_else(PoisonError::into_inner);
        let key = (family, k, mixed, accelerate, noise, weights);
        if let Some(f) = cache.get(&key) {
            return Ok(f.clone());
        }
        let code = family.kernel_code();
        let source = format!(
            "{}{COMMON}{SPECIAL}{BATCHED}\nEM_BATCHED({k}, {code}, {}, {}, {}, {})\n",
            prelude(),
            mixed as i32,
            accelerate as i32,
            noise as i32,
            weights as i32
        );
        let names = ["em_batched_lane", "em_batched_group"];
        let mut f = contained("compiling em_batched", || build(&self.ctx, &self.arch, source, &names))?.into_iter();
        let (Some(lane), Some(group)) = (f.next(), f.next()) else {
            return Err("em_batched missing after compilation".into());
        };
        let b = Batched { lane, group };
        cache.insert(key, b.clone());
        Ok(b)
    }

    /// em_mv for K components, d variables, covariance structure `s`
    /// (mv::Structure::kernel_code), a noise component or not, and the
    /// components' family `t` (mv::Model::kernel_family), weighted
    /// observations or not, compiled on first use.
    pub fn mv(&self, k: usize, d: usize, s: i32, noise: bool, t: i32, weighted: bool) -> Result<CudaFunction, String> {
        let mut cache = self.mv.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(f) = cache.get(&(k, d, s, noise, t, weighted)) {
            return Ok(f.clone());
        }
        let (n, w) = (noise as i32, weighted as i32);
        let source = format!("{}{SPECIAL}{MV}\nEM_MV({k}, {d}, {s}, {n}, {t}, {w})\n", prelude());
        let f = contained("compiling em_mv", || build(&self.ctx, &self.arch, source, &["em_mv"]))?
            .into_iter()
            .next()
            .ok_or("em_mv missing after compilation")?;
        cache.insert((k, d, s, noise, t, weighted), f.clone());
        Ok(f)
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
        family: Family,
        terms: &CudaSlice<f64>,
        noise_t: Option<&CudaSlice<f64>>,
        weights: Option<&CudaSlice<f64>>,
        per_obs: &mut CudaSlice<f64>,
        starts: usize,
    ) -> Result<(), String> {
        if starts > MAX_GRID_Y {
            return Err(format!("{starts} starts in one em_obs_terms launch exceed the grid's limit of {MAX_GRID_Y}"));
        }
        let blocks = as_int(n.div_ceil(OBS_THREADS as usize), "blocks of em_obs_terms")? as u32;
        let cfg = LaunchConfig {
            grid_dim: (if fault_injected("launch") { 0 } else { blocks }, starts as u32, 1),
            block_dim: (OBS_THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let (n, k, code) = (as_int(n, "observations in a dataset")?, as_int(k, "components")?, family.kernel_code());
        // SAFETY: arguments match em_obs_terms(x, g, n, k, family, terms,
        // noise_t, w, per_obs) in order and type (noise_t and w device
        // pointers or null); x, g, noise_t and w hold n values, terms holds TERMS_PER_START
        // per start and per_obs (1 + 3k + noise) * n per start ((1 + 5k +
        // noise) * n for Student's t), for `starts` starts (checked by the
        // caller's buffer sizing).
        let null = 0u64;
        let launched = contained("launching em_obs_terms", || {
            let mut builder = stream.launch_builder(&self.obs_terms);
            builder.arg(x).arg(g).arg(&n).arg(&k).arg(&code).arg(terms);
            match noise_t {
                Some(t) => builder.arg(t),
                None => builder.arg(&null),
            };
            match weights {
                Some(w) => builder.arg(w),
                None => builder.arg(&null),
            };
            unsafe { builder.arg(per_obs).launch(cfg) }
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
        let cfg = LaunchConfig {
            grid_dim: (as_int(starts, "starts in one em_fused_sum launch")? as u32, 1, 1),
            block_dim: (SUM_THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let (n, rows) = (as_int(n, "observations in a dataset")?, as_int(rows, "sums per start")?);
        // SAFETY: arguments match em_fused_sum(per_obs, n, rows, sums); per_obs
        // holds rows * n values per start and sums rows per start.
        contained("launching em_fused_sum", || {
            unsafe { stream.launch_builder(&self.fused_sum).arg(per_obs).arg(&n).arg(&rows).arg(sums).launch(cfg) }
                .map(|_| ())
                .map_err(|e| format!("launching em_fused_sum failed: {e:?}"))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::MAX_COMPONENTS;

    /// Every kernel source, with its prelude, compiles for a Hopper GPU
    /// (em_batched for every family, K and precision it is launched with). Needs only NVRTC, not
    /// a GPU: it runs wherever libnvrtc is found (e.g. LD_LIBRARY_PATH set to
    /// a pip wheel's nvidia/cuda_nvrtc/lib) and says it skipped otherwise.
    #[test]
    fn every_kernel_compiles_with_its_prelude() {
        // SAFETY: only attempts dlopen of the candidate library names.
        if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
            eprintln!("skipped: NVRTC not found");
            return;
        }
        let compile = |source: String| {
            let opts = CompileOptions {
                options: vec!["--gpu-architecture=compute_90".into(), "--std=c++17".into()],
                ..Default::default()
            };
            compile_ptx_with_opts(source, opts).map(|_| ()).map_err(|e| match e {
                CompileError::CompileError { log, .. } => log.to_string_lossy().into_owned(),
                other => format!("{other:?}"),
            })
        };
        assert_eq!(compile(format!("{}{COMMON}{STREAMS}", prelude())), Ok(()));
        for k in 1..=MAX_COMPONENTS {
            for fam in [0, 1, 2, 3] {
                // mixed precision has no noise component, no weights and no t (family 3)
                for (mixed, acc, noise, w) in [
                    (0, 0, 0, 0),
                    (1, 0, 0, 0),
                    (0, 1, 0, 0),
                    (1, 1, 0, 0),
                    (0, 0, 1, 0),
                    (0, 1, 1, 0),
                    (0, 1, 0, 1),
                    (0, 0, 1, 1),
                ] {
                    if mixed == 1 && fam == Family::StudentT.kernel_code() {
                        continue;
                    }
                    let source = format!(
                        "{}{COMMON}{SPECIAL}{BATCHED}\nEM_BATCHED({k}, {fam}, {mixed}, {acc}, {noise}, {w})\n",
                        prelude()
                    );
                    assert_eq!(
                        compile(source),
                        Ok(()),
                        "K = {k}, family {fam}, mixed {mixed}, acc {acc}, noise {noise}, weights {w}"
                    );
                }
            }
        }
    }

    /// em_mv for every K, every d up to MV_MAX_VARIABLES (in steps: each
    /// takes a while) and every structure.
    #[test]
    fn every_mv_kernel_compiles() {
        // SAFETY: only attempts dlopen of the candidate library names.
        if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
            eprintln!("skipped: NVRTC not found");
            return;
        }
        let opts = || CompileOptions {
            options: vec!["--gpu-architecture=compute_90".into(), "--std=c++17".into()],
            ..Default::default()
        };
        for (k, d) in [(1, 2), (2, 2), (3, 4), (8, 3), (4, MV_MAX_VARIABLES), (MAX_COMPONENTS, MV_MAX_VARIABLES)] {
            for (s, noise, t) in
                [(0, 0, 0), (1, 0, 0), (2, 0, 0), (3, 0, 0), (0, 1, 0), (1, 1, 0), (0, 0, 1), (3, 1, 1), (1, 0, 2)]
            {
                let source = format!("{}{SPECIAL}{MV}\nEM_MV({k}, {d}, {s}, {noise}, {t})\n", prelude());
                let r = compile_ptx_with_opts(source, opts()).map(|_| ()).map_err(|e| match e {
                    CompileError::CompileError { log, .. } => log.to_string_lossy().into_owned(),
                    other => format!("{other:?}"),
                });
                assert_eq!(r, Ok(()), "K = {k}, d = {d}, structure {s}, noise {noise}, t {t}");
            }
        }
    }

    #[test]
    fn sizes_past_a_kernel_int_are_refused_not_truncated() {
        assert_eq!(as_int(5, "x"), Ok(5));
        assert_eq!(as_int(i32::MAX as usize, "x"), Ok(i32::MAX));
        let too_big = i32::MAX as usize + 1;
        let e = as_int(too_big, "observations in a dataset").unwrap_err();
        assert!(e.contains("observations in a dataset (2147483648) exceeds"), "{e}");
        assert!(as_int(usize::MAX, "x").is_err());
    }
}
