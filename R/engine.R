# Which engine runs a call, and the fallback from a failing GPU to the CPU.

engine_names <- c("auto", "cpu", "cuda-streams", "cuda-batched")
# cuda-batched is faster than cuda-streams and the CPU engine on every
# workload of DESIGN §6 on the GPU machine (inst/bench/results-engines-gpu.md)
gpu_engine_default <- "cuda-batched"

# The engine for use.gpu and control$engine, or an error naming the conflict.
# `streams_only` calls (truncated or censored data) go to cuda-streams on a
# GPU: cuda-batched does not fit them yet.
choose_engine <- function(use.gpu, engine, streams_only = FALSE) {
  if (engine == "cpu" || isFALSE(use.gpu)) {
    if (isTRUE(use.gpu)) {
      stop_arg("`use.gpu = TRUE` conflicts with `control$engine = \"cpu\"`")
    }
    if (engine != "auto" && engine != "cpu") {
      stop_arg("`use.gpu = FALSE` conflicts with `control$engine = \"", engine, "\"`")
    }
    return("cpu")
  }
  gpu <- gpu_usable_()
  if (isTRUE(gpu)) {
    if (engine != "auto") return(engine)
    return(if (streams_only) "cuda-streams" else gpu_engine_default)
  }
  # `gpu` is the condition saying why not, with the cause alone in `reason`
  if (isTRUE(use.gpu) || engine != "auto") {
    gpu$message <- paste0(if (isTRUE(use.gpu)) "`use.gpu = TRUE`" else paste0("`control$engine = \"", engine, "\"`"),
                          " needs a usable GPU, but ", gpu$reason)
    raise(gpu)
  }
  # use.gpu = NA: say why only when a GPU seems to be there but cannot be
  # used; a machine without any NVIDIA driver just runs on the CPU.
  if (!inherits(gpu, "bulkem_error_gpu_no_driver")) {
    message("bulkem: the GPU cannot be used (", gpu$reason, "); fitting on the CPU")
  }
  "cpu"
}

# Runs `run(engine)`, which returns the engine's list or the condition that
# stopped it; under use.gpu = NA a GPU failure becomes one message and the
# CPU engine's result. Returns the engine's list plus `engine`, or raises.
run_with_fallback <- function(run, engine, use.gpu) {
  res <- run(engine)
  if (inherits(res, "bulkem_error_gpu") && is.na(use.gpu)) {
    message("bulkem: ", conditionMessage(res), "; fitting on the CPU instead")
    engine <- "cpu"
    res <- run(engine)
  }
  res <- core_value(res)
  res$engine <- engine
  res
}

#' What bulkem sees of CUDA on this machine
#'
#' Reports whether the NVIDIA driver library (`libcuda`) and the CUDA runtime
#' compiler (`libnvrtc`, CUDA 12 or 13) were found, the GPUs the driver lists,
#' and whether bulkem can run its GPU engines, and if not, why not. bulkem
#' needs no CUDA at build time: it loads these libraries when first asked.
#' Asking sets the GPU up once per R session (the kernels are compiled for
#' the device by NVRTC, which takes a fraction of a second).
#'
#' @returns A list with `driver_found` and `nvrtc_found` (logical), `devices`
#'   (a data frame with `device` (the number `control$devices` takes, from
#'   0), `name`, `compute_capability`, `memory_gib`, `free_gib` and
#'   `pinned_gib` per GPU: the page-locked host memory `cuda-batched` keeps
#'   for that GPU in this R session, at most 0.75 GiB, see [bulkem()]'s
#'   `control$engine`), `usable` (logical), `reason` (why not, or `""`) and
#'   `kernel_compilations` (how often this R session compiled the kernels:
#'   once per GPU used, whatever the number of calls).
#' @examples
#' info <- bulkem_gpu_info()
#' info$usable
#' @export
bulkem_gpu_info <- function() {
  r <- gpu_info_()
  list(driver_found = r$driver_found, nvrtc_found = r$nvrtc_found,
       devices = data.frame(device = seq_along(r$device_name) - 1L,
                            name = as.character(r$device_name),
                            compute_capability = as.character(r$compute_capability),
                            memory_gib = as.numeric(r$memory_gib),
                            free_gib = as.numeric(r$free_gib),
                            pinned_gib = as.numeric(r$pinned_gib)),
       usable = r$usable, reason = r$reason, kernel_compilations = r$kernel_compilations)
}
