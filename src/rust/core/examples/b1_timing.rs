//! Times the CPU engine on a B1-shaped job from Rust alone (no R), to see
//! the engine's cost without the R round trip: cargo run --release --example b1_timing
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use bulkem_core::{fit, Counters, Family, Job, Settings, Tuning};
use rand::{RngExt, SeedableRng};

fn main() {
    let threads: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(2);
    let mut rng = rand_pcg::Pcg64::seed_from_u64(1);
    // IG(μ, λ) draws by Michael–Schucany–Haas, B1's mixture
    let mut sets: Vec<Vec<f64>> = Vec::new();
    for _ in 0..100 {
        let mut data = Vec::new();
        for _ in 0..2000 {
            let (mu, lambda) = if rng.random::<f64>() < 0.3 { (1.0, 30.0) } else { (3.0, 0.2) };
            let u: f64 = 1.0 - rng.random::<f64>();
            let z = (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * rng.random::<f64>()).cos();
            let y = z * z;
            let x = mu + mu * mu * y / (2.0 * lambda)
                - mu / (2.0 * lambda) * (4.0 * mu * lambda * y + mu * mu * y * y).sqrt();
            data.push(if rng.random::<f64>() <= mu / (mu + x) { x } else { mu * mu / x });
        }
        sets.push(data);
    }
    let job = Job {
        datasets: sets.iter().map(|d| d.as_slice()).collect(),
        inits: Vec::new(),
        settings: Settings {
            family: Family::InvGauss,
            components: vec![2],
            max_iters: 100,
            epsilon: 1e-6,
            starts: 10,
            seed: 1,
            start_scheme: Default::default(),
            mixed_precision: false,
            accelerate: false,
            keep_starts: false,
            screen: Default::default(),
            restarts: 0,
            refine: 0,
            short_runs: Default::default(),
            devices: Vec::new(),
            standard_errors: true,
            noise: false,
            df: Vec::new(),
            criterion: Default::default(),
            equal_scale: false,
        },
        tuning: Tuning::default(),
        noise_supports: Vec::new(),
        given_starts: Vec::new(),
        weights: Vec::new(),
        fixed: Vec::new(),
        truncation: Vec::new(),
        censored: Vec::new(),
    };
    let t = Instant::now();
    let fits =
        fit(&job, bulkem_core::EngineKind::Cpu, threads, &AtomicBool::new(false), &Counters::default()).expect("fit");
    let secs = t.elapsed().as_secs_f64();
    let iters: u32 = fits.iter().map(|f| f.iterations).sum();
    println!(
        "B1 on {threads} threads: {secs:.3} s, {:.1} us per start-fit, winner iterations mean {:.1}",
        secs / 1000.0 * 1e6,
        iters as f64 / 100.0
    );
}
