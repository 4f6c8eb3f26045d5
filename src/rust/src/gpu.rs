//! What bulkem sees of CUDA, for bulkem_gpu_info() and engine choice in R.

use bulkem_core::gpu;
use extendr_api::prelude::*;

use crate::error::or_condition;

/// `TRUE` if the CUDA engines can run here, or else the condition saying
/// why not, for R to decide by its class (sets up the GPU on first call:
/// probe, context, kernel compile).
/// @noRd
#[extendr]
fn gpu_usable_() -> Robj {
    or_condition(gpu::gpu().map(|_| true).map_err(bulkem_core::Error::GpuUnavailable))
}

/// Driver and NVRTC found or not, devices, and whether bulkem can use them.
/// @noRd
#[extendr]
fn gpu_info_() -> List {
    let r = gpu::report();
    let names: Vec<String> = r.devices.iter().map(|d| d.name.clone()).collect();
    let cc: Vec<String> =
        r.devices.iter().map(|d| format!("{}.{}", d.compute_capability.0, d.compute_capability.1)).collect();
    let gib = |bytes: usize| bytes as f64 / (1u64 << 30) as f64;
    let mem: Vec<f64> = r.devices.iter().map(|d| gib(d.total_memory)).collect();
    let free: Vec<f64> = r.devices.iter().map(|d| gib(d.free_memory)).collect();
    let pinned: Vec<f64> = r.devices.iter().map(|d| gib(d.pinned)).collect();
    let (usable, reason) = match &r.usable {
        Ok(()) => (true, String::new()),
        Err(why) => (false, why.to_string()),
    };
    list!(
        driver_found = r.driver_found,
        nvrtc_found = r.nvrtc_found,
        device_name = names,
        compute_capability = cc,
        memory_gib = mem,
        free_gib = free,
        pinned_gib = pinned,
        usable = usable,
        reason = reason,
        kernel_compilations = gpu::compilations() as i32
    )
}

extendr_module! {
    mod gpu;
    fn gpu_usable_;
    fn gpu_info_;
}
