//! The CPU E-step per observation, next to what the machine's exponential
//! and floating-point pipes can do on one core (issue 14's measurement):
//!   cargo run --release --example estep_timing
//! Prints ns per observation of one E-step pass (n = 2,000 as B1, and 100
//! as B5) for both families and K = 2, 3, as e_step runs it (and e_step_noisy
//! with a noise component) and by the
//! block loops alone (K = 2 to 8 have AVX-512 and AVX2 code of their own,
//! estep_avx512.rs and estep_avx2.rs); ns per value of exp_nonpos (value
//! by value, and exp_nonpos_all as the E-step calls it) and of libm's exp;
//! and the core's rate of independent 4-wide multiply-adds (separate, as
//! the E-step does them, and fused), and 8-wide where it has AVX-512.
use std::hint::black_box;
use std::time::Instant;

use bulkem_core::estep::{e_step, e_step_blocked, e_step_noisy};
use bulkem_core::{Family, Params};

fn per(secs: f64, count: usize) -> f64 {
    secs / count as f64 * 1e9
}

fn main() {
    // B1's datasets, and B5's (where the padding of the last block shows)
    for (n, reps) in [(2000usize, 20_000usize), (100, 400_000)] {
        let xs: Vec<f64> = (0..n).map(|i| 0.05 + ((i * 7919) % 1000) as f64 / 250.0).collect();
        println!("E-step pass, n = {n}, one core:");
        for (family, k) in [(Family::InvGauss, 2usize), (Family::Normal, 2), (Family::InvGauss, 3), (Family::Normal, 3)]
        {
            let g: Vec<f64> = xs.iter().map(|&x| if family == Family::InvGauss { 1.0 / x } else { x * x }).collect();
            let mut p = Params::zeroed(k);
            for m in 0..k {
                p.alpha[m] = 1.0 / k as f64;
                p.mu[m] = 0.5 + m as f64;
                p.shape[m] = 1.0 + m as f64;
            }
            let t = Instant::now();
            for _ in 0..reps {
                black_box(e_step(family, black_box(&xs), &g, &p));
            }
            let fast = per(t.elapsed().as_secs_f64(), reps * n);
            let t = Instant::now();
            for _ in 0..reps {
                black_box(e_step_blocked(family, black_box(&xs), &g, &p));
            }
            let blocked = per(t.elapsed().as_secs_f64(), reps * n);
            // with a noise component (t(x) constant: the Normal's, rescaled)
            let t_noise = vec![-2.0; n];
            p.noise = 0.05;
            let t = Instant::now();
            for _ in 0..reps {
                black_box(e_step_noisy(family, black_box(&xs), &g, &t_noise, &p));
            }
            let noisy = per(t.elapsed().as_secs_f64(), reps * n);
            println!(
                "  {family:?} K = {k}: {fast:.2} ns per observation (block loops alone {blocked:.2}; \
                 with a noise component {noisy:.2})"
            );
        }
    }

    // exponentials of a block of 64 values in [-6.3, 0], as in the E-step
    // (with AVX2 where the E-step has it)
    let src: Vec<f64> = (0..64).map(|i| -(i as f64) * 0.1).collect();
    let mut v = src.clone();
    let reps = 2_000_000;
    println!("Exponentials, blocks of 64, one core:");
    let t = Instant::now();
    for _ in 0..reps {
        v.copy_from_slice(&src);
        vector::one_by_one(black_box(&mut v));
    }
    println!("  exp_nonpos value by value: {:.2} ns per value", per(t.elapsed().as_secs_f64(), reps * 64));
    let t = Instant::now();
    for _ in 0..reps {
        v.copy_from_slice(&src);
        vector::all(black_box(&mut v));
    }
    println!("  exp_nonpos_all:            {:.2} ns per value", per(t.elapsed().as_secs_f64(), reps * 64));
    let t = Instant::now();
    for _ in 0..reps {
        v.copy_from_slice(&src);
        for x in black_box(&mut v).iter_mut() {
            *x = x.exp();
        }
    }
    println!("  libm exp:                  {:.2} ns per value", per(t.elapsed().as_secs_f64(), reps * 64));

    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        let steps = 50_000_000;
        println!("Floating-point pipes, 12 independent 4-wide chains, one core:");
        let t = Instant::now();
        // SAFETY: AVX2 and FMA are present (checked above)
        black_box(unsafe { pipes::chains::<false>(steps) });
        let s = t.elapsed().as_secs_f64();
        println!(
            "  multiply then add: {:.3} ns per 4-wide pair, {:.1} Gflop/s",
            per(s, steps * 12),
            (steps * 12 * 8) as f64 / s / 1e9
        );
        let t = Instant::now();
        // SAFETY: as above
        black_box(unsafe { pipes::chains::<true>(steps) });
        let s = t.elapsed().as_secs_f64();
        println!(
            "  fused multiply-add: {:.3} ns per 4-wide FMA, {:.1} Gflop/s",
            per(s, steps * 12),
            (steps * 12 * 8) as f64 / s / 1e9
        );
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") {
        let steps = 50_000_000;
        println!("Floating-point pipes, 12 independent 8-wide chains, one core:");
        let t = Instant::now();
        // SAFETY: AVX-512F is present (checked above)
        black_box(unsafe { pipes::chains8(steps) });
        let s = t.elapsed().as_secs_f64();
        println!(
            "  multiply then add: {:.3} ns per 8-wide pair, {:.1} Gflop/s",
            per(s, steps * 12),
            (steps * 12 * 16) as f64 / s / 1e9
        );
    }
}

/// The exponentials compiled as the E-step is: with AVX2 where the CPU has it.
mod vector {
    use bulkem_core::mathx::{exp_nonpos, exp_nonpos_all};

    pub fn one_by_one(v: &mut [f64]) {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: AVX2 is present (checked just above)
            return unsafe { one_by_one_avx2(v) };
        }
        for x in v.iter_mut() {
            *x = exp_nonpos(*x);
        }
    }

    pub fn all(v: &mut [f64]) {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: as above
            return unsafe { all_avx2(v) };
        }
        exp_nonpos_all(v)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn one_by_one_avx2(v: &mut [f64]) {
        for x in v.iter_mut() {
            *x = exp_nonpos(*x);
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn all_avx2(v: &mut [f64]) {
        exp_nonpos_all(v)
    }
}

#[cfg(target_arch = "x86_64")]
mod pipes {
    use std::arch::x86_64::*;

    /// 12 independent chains of x = x·a + b, 4-wide: a multiply then an
    /// add, or (FUSED) one fused multiply-add.
    #[target_feature(enable = "avx2,fma")]
    pub fn chains<const FUSED: bool>(steps: usize) -> [f64; 4] {
        let (a, b) = (_mm256_set1_pd(0.999_999), _mm256_set1_pd(1e-7));
        let mut x = [_mm256_set1_pd(1.0); 12];
        for _ in 0..steps {
            for v in x.iter_mut() {
                *v = if FUSED { _mm256_fmadd_pd(*v, a, b) } else { _mm256_add_pd(_mm256_mul_pd(*v, a), b) };
            }
        }
        fold(x)
    }

    /// The same, 8-wide, a multiply then an add (as the AVX-512 E-step).
    #[target_feature(enable = "avx512f")]
    pub fn chains8(steps: usize) -> [f64; 4] {
        let (a, b) = (_mm512_set1_pd(0.999_999), _mm512_set1_pd(1e-7));
        let mut x = [_mm512_set1_pd(1.0); 12];
        for _ in 0..steps {
            for v in x.iter_mut() {
                *v = _mm512_add_pd(_mm512_mul_pd(*v, a), b);
            }
        }
        fold(x.map(|v| _mm256_add_pd(_mm512_castpd512_pd256(v), _mm512_extractf64x4_pd::<1>(v))))
    }

    #[target_feature(enable = "avx2")]
    fn fold(x: [__m256d; 12]) -> [f64; 4] {
        let mut s = _mm256_setzero_pd();
        for v in x {
            s = _mm256_add_pd(s, v);
        }
        let mut out = [0.0; 4];
        // SAFETY: out holds 4 f64
        unsafe { _mm256_storeu_pd(out.as_mut_ptr(), s) };
        out
    }
}
