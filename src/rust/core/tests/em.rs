//! End-to-end behaviour of the core on simulated data: parameter recovery,
//! monotone EM, reproducibility and the independence promises of DESIGN §5.

use std::sync::atomic::AtomicBool;

use bulkem_core::estep::e_step;
use bulkem_core::family;
use bulkem_core::mstep::m_step;
use bulkem_core::{fit, Counters, Family, Fit, Job, Settings, Status, Tuning};
use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64;

fn normal(rng: &mut Pcg64) -> f64 {
    // Box–Muller
    let u: f64 = 1.0 - rng.random::<f64>();
    let v: f64 = rng.random();
    (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
}

/// IG(μ, λ) by Michael, Schucany & Haas (1976).
fn inv_gauss(rng: &mut Pcg64, mu: f64, lambda: f64) -> f64 {
    let y = normal(rng).powi(2);
    let x = mu + mu * mu * y / (2.0 * lambda) - mu / (2.0 * lambda) * (4.0 * mu * lambda * y + mu * mu * y * y).sqrt();
    if rng.random::<f64>() <= mu / (mu + x) {
        x
    } else {
        mu * mu / x
    }
}

fn mixture(rng: &mut Pcg64, family: Family, n: usize, alpha: &[f64], mu: &[f64], shape: &[f64]) -> Vec<f64> {
    (0..n)
        .map(|_| {
            let u: f64 = rng.random();
            let mut m = 0;
            let mut acc = alpha[0];
            while u > acc && m + 1 < alpha.len() {
                m += 1;
                acc += alpha[m];
            }
            match family {
                Family::InvGauss => inv_gauss(rng, mu[m], shape[m]),
                Family::Normal => mu[m] + shape[m] * normal(rng),
                Family::Lognormal => (mu[m] + shape[m] * normal(rng)).exp(),
                Family::Gamma | Family::StudentT | Family::ExGauss => {
                    panic!("these tests draw no gamma, t or ex-Gaussian data")
                }
            }
        })
        .collect()
}

fn run(datasets: &[Vec<f64>], family: Family, k: usize, starts: u32, seed: u64, threads: usize) -> Vec<Fit> {
    let job = Job {
        datasets: datasets.iter().map(|d| d.as_slice()).collect(),
        inits: Vec::new(),
        settings: Settings {
            family,
            components: vec![k],
            max_iters: 500,
            epsilon: 1e-8,
            starts,
            seed,
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
    fit(&job, bulkem_core::EngineKind::Cpu, threads, &AtomicBool::new(false), &Counters::default())
        .unwrap()
        .into_iter()
        .map(|f| *f)
        .collect()
}

#[test]
fn recovers_the_2015_demo_mixture() {
    // B1's mixture: μ = (1, 3), λ = (30, 0.2), α = (0.3, 0.7)
    let mut rng = Pcg64::seed_from_u64(1);
    let data = mixture(&mut rng, Family::InvGauss, 20_000, &[0.3, 0.7], &[1.0, 3.0], &[30.0, 0.2]);
    let f = &run(&[data], Family::InvGauss, 2, 10, 5, 2)[0];
    assert_eq!(f.status, Status::Converged, "{}", f.message);
    let p = f.params.unwrap();
    assert!((p.alpha[0] - 0.3).abs() < 0.02, "{p:?}");
    assert!((p.mu[0] - 1.0).abs() < 0.03 && (p.mu[1] - 3.0).abs() < 0.3, "{p:?}");
    assert!((p.shape[0] - 30.0).abs() < 3.0 && (p.shape[1] - 0.2).abs() < 0.02, "{p:?}");
}

#[test]
fn recovers_a_three_component_normal_mixture() {
    let mut rng = Pcg64::seed_from_u64(2);
    let data = mixture(&mut rng, Family::Normal, 30_000, &[0.2, 0.5, 0.3], &[-4.0, 0.0, 5.0], &[1.0, 0.5, 2.0]);
    let f = &run(&[data], Family::Normal, 3, 20, 9, 2)[0];
    assert_eq!(f.status, Status::Converged, "{}", f.message);
    let p = f.params.unwrap();
    for (m, (a, mu, sd)) in [(0.2, -4.0, 1.0), (0.5, 0.0, 0.5), (0.3, 5.0, 2.0)].into_iter().enumerate() {
        assert!((p.alpha[m] - a).abs() < 0.015, "{p:?}");
        assert!((p.mu[m] - mu).abs() < 0.06, "{p:?}");
        assert!((p.shape[m] - sd).abs() < 0.06 * sd, "{p:?}");
    }
}

#[test]
fn the_log_likelihood_never_falls_and_is_reported_exactly() {
    let mut rng = Pcg64::seed_from_u64(3);
    for family in [Family::InvGauss, Family::Normal] {
        let xs = mixture(&mut rng, family, 2_000, &[0.4, 0.6], &[1.0, 2.5], &[4.0, 1.5]);
        let g: Vec<f64> = xs.iter().map(|&x| family::aux(family, x)).collect();
        let h: f64 = xs.iter().map(|&x| family::log_h(family, x)).sum();
        let mut p = bulkem_core::Params::zeroed(2);
        p.alpha[..2].copy_from_slice(&[0.5, 0.5]);
        p.mu[..2].copy_from_slice(&[0.8, 1.2]);
        p.shape[..2].copy_from_slice(&[1.0, 1.0]);
        let mut prev = f64::NEG_INFINITY;
        for _ in 0..200 {
            let st = e_step(family, &xs, &g, &p);
            let ll = st.ll + h;
            // the E-step's log-likelihood is the log-likelihood of p
            let exact = family::log_likelihood(family, &xs, &p);
            assert!((ll - exact).abs() < 1e-11 * exact.abs());
            assert!(ll >= prev - 1e-9 * prev.abs(), "{family:?}: {ll} after {prev}");
            prev = ll;
            p = m_step(family, 2, &st, xs.len() as f64, 1.0, false, None).unwrap();
        }
    }
    // and the value reported for a fit is the exact log-likelihood of its parameters
    let xs = mixture(&mut rng, Family::InvGauss, 500, &[0.5, 0.5], &[1.0, 3.0], &[10.0, 2.0]);
    let f = &run(std::slice::from_ref(&xs), Family::InvGauss, 2, 5, 1, 1)[0];
    let exact = family::log_likelihood(Family::InvGauss, &xs, &f.params.unwrap());
    assert!((f.loglik - exact).abs() < 1e-12 * exact.abs(), "{} vs {exact}", f.loglik);
}

#[test]
fn fits_do_not_depend_on_threads_position_or_company() {
    let mut rng = Pcg64::seed_from_u64(4);
    let sets: Vec<Vec<f64>> = (0..12)
        .map(|i| mixture(&mut rng, Family::InvGauss, 100 + 37 * i, &[0.3, 0.7], &[1.0, 3.0], &[30.0, 0.2]))
        .collect();
    let base = run(&sets, Family::InvGauss, 2, 8, 77, 1);
    assert_eq!(base, run(&sets, Family::InvGauss, 2, 8, 77, 2));
    assert_eq!(base, run(&sets, Family::InvGauss, 2, 8, 77, 7));
    // dataset 5 alone, and last in a reversed list with an invalid dataset in front
    assert_eq!(base[5], run(&sets[5..6], Family::InvGauss, 2, 8, 77, 2)[0]);
    let mut reversed: Vec<Vec<f64>> = vec![vec![1.0, -1.0]];
    reversed.extend(sets.iter().rev().cloned());
    let rev = run(&reversed, Family::InvGauss, 2, 8, 77, 3);
    assert_eq!(rev[0].status, Status::Invalid);
    for (i, f) in rev[1..].iter().rev().enumerate() {
        assert_eq!(*f, base[i]);
    }
    // a different seed gives different starts
    let other = run(&sets, Family::InvGauss, 2, 8, 78, 2);
    assert_ne!(base.iter().map(|f| f.init).collect::<Vec<_>>(), other.iter().map(|f| f.init).collect::<Vec<_>>());
}

#[test]
fn bad_datasets_get_their_own_status() {
    let mut rng = Pcg64::seed_from_u64(5);
    let good = mixture(&mut rng, Family::InvGauss, 300, &[0.5, 0.5], &[1.0, 3.0], &[10.0, 2.0]);
    let sets = vec![good.clone(), vec![1.0, 2.0], vec![3.0; 50], vec![1.0, f64::NAN, 2.0, 3.0, 4.0, 5.0], vec![]];
    let fits = run(&sets, Family::InvGauss, 2, 4, 1, 2);
    assert!(fits[0].params.is_some());
    assert_eq!(fits[0], run(&[good], Family::InvGauss, 2, 4, 1, 1)[0]);
    for f in &fits[1..] {
        assert_eq!(f.status, Status::Invalid);
        assert!(f.params.is_none() && f.loglik.is_nan() && !f.message.is_empty());
    }
    assert!(fits[2].message.contains("has all 50 values equal"), "{}", fits[2].message);
    assert!(fits[4].message.contains("has 0 observations"), "{}", fits[4].message);
}

#[test]
fn a_dataset_whose_starts_all_fail_is_reported_failed() {
    // 8 observations, K = 2: a component must keep two observations' worth of
    // weight, and two clusters of 7 and 1 cannot both do so for long.
    let xs = vec![1.0, 1.001, 1.002, 1.003, 1.004, 1.005, 1.006, 50.0];
    let f = &run(&[xs], Family::Normal, 2, 5, 3, 1)[0];
    assert_eq!(f.status, Status::Failed, "{f:?}");
    assert!(f.message.contains("all 5 random starts failed"), "{}", f.message);
    assert!(f.params.is_none());
}

#[test]
fn cancelling_stops_the_call() {
    let mut rng = Pcg64::seed_from_u64(6);
    let xs = mixture(&mut rng, Family::Normal, 1000, &[0.5, 0.5], &[0.0, 3.0], &[1.0, 1.0]);
    let job = Job {
        datasets: vec![&xs],
        inits: Vec::new(),
        settings: Settings {
            family: Family::Normal,
            components: vec![2],
            max_iters: 100,
            epsilon: 1e-6,
            starts: 50,
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
    let cancel = AtomicBool::new(true);
    assert_eq!(
        fit(&job, bulkem_core::EngineKind::Cpu, 2, &cancel, &Counters::default()),
        Err(bulkem_core::Error::Cancelled)
    );
}

fn run_accelerated(
    datasets: &[Vec<f64>],
    family: Family,
    k: usize,
    accelerate: bool,
    epsilon: f64,
    counters: &Counters,
) -> Vec<Fit> {
    let job = Job {
        datasets: datasets.iter().map(|d| d.as_slice()).collect(),
        inits: Vec::new(),
        settings: Settings {
            family,
            components: vec![k],
            max_iters: 100_000,
            epsilon,
            starts: 5,
            seed: 3,
            start_scheme: Default::default(),
            mixed_precision: false,
            accelerate,
            keep_starts: false,
            screen: Default::default(),
            restarts: 0,
            refine: 0,
            short_runs: Default::default(),
            devices: Vec::new(),
            standard_errors: false,
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
    fit(&job, bulkem_core::EngineKind::Cpu, 2, &AtomicBool::new(false), counters)
        .unwrap()
        .into_iter()
        .map(|f| *f)
        .collect()
}

#[test]
fn squarem_reaches_plain_em_optimum_in_fewer_passes() {
    // Overlapping components, where plain EM creeps: SQUAREM must end at the
    // same maximum (both run to a tight epsilon) with far fewer E-step passes,
    // and its reported log-likelihood must be that of its parameters.
    let mut rng = Pcg64::seed_from_u64(11);
    let sets: Vec<(Family, Vec<f64>)> = vec![
        (Family::Normal, mixture(&mut rng, Family::Normal, 800, &[0.4, 0.6], &[0.0, 1.5], &[1.0, 1.0])),
        (Family::InvGauss, mixture(&mut rng, Family::InvGauss, 800, &[0.3, 0.7], &[1.0, 3.0], &[30.0, 0.2])),
        (Family::Normal, mixture(&mut rng, Family::Normal, 800, &[1.0], &[0.0], &[1.0])),
    ];
    for (family, data) in sets {
        let (plain_count, acc_count) = (Counters::default(), Counters::default());
        let plain = &run_accelerated(std::slice::from_ref(&data), family, 2, false, 1e-10, &plain_count)[0];
        let acc = &run_accelerated(std::slice::from_ref(&data), family, 2, true, 1e-10, &acc_count)[0];
        assert_eq!(acc.status, Status::Converged, "{}", acc.message);
        let (a, b) = (plain.params.unwrap(), acc.params.unwrap());
        assert!(
            (plain.loglik - acc.loglik).abs() < 1e-6 * plain.loglik.abs(),
            "{family:?}: {} vs {}",
            plain.loglik,
            acc.loglik
        );
        if plain.loglik - acc.loglik < 1e-7 * plain.loglik.abs() && (a.mu[0] - a.mu[1]).abs() > 0.5 {
            for m in 0..2 {
                assert!((a.mu[m] - b.mu[m]).abs() < 1e-3 * (1.0 + a.mu[m].abs()), "{family:?} mu {m}: {a:?} vs {b:?}");
            }
        }
        let direct: f64 = data
            .iter()
            .map(|&x| {
                (0..2).map(|m| b.alpha[m] * family::log_density(family, x, b.mu[m], b.shape[m]).exp()).sum::<f64>().ln()
            })
            .sum();
        assert!(
            (direct - acc.loglik).abs() < 1e-8 * direct.abs(),
            "{family:?}: reported {} direct {}",
            acc.loglik,
            direct
        );
        let passes = |c: &Counters| c.em_iterations.load(std::sync::atomic::Ordering::Relaxed);
        assert!(
            passes(&acc_count) * 2 < passes(&plain_count),
            "{family:?}: {} vs {} passes",
            passes(&acc_count),
            passes(&plain_count)
        );
    }
}

#[test]
fn squarem_never_reports_a_lower_likelihood_than_its_em_steps_reached() {
    // Every start's path: the log-likelihoods of its plain EM steps never fall
    // (the extrapolations are accepted only when they do not lose), so each
    // start ends no lower than plain EM's first update from the same start.
    let mut rng = Pcg64::seed_from_u64(12);
    let data: Vec<Vec<f64>> = (0..20)
        .map(|_| mixture(&mut rng, Family::Normal, 300, &[0.5, 0.3, 0.2], &[0.0, 2.0, 4.0], &[1.0, 0.7, 1.2]))
        .collect();
    let job = |accelerate, max_iters| Job {
        datasets: data.iter().map(|d| d.as_slice()).collect(),
        inits: Vec::new(),
        settings: Settings {
            family: Family::Normal,
            components: vec![3],
            max_iters,
            epsilon: 1e-8,
            starts: 4,
            seed: 9,
            start_scheme: Default::default(),
            mixed_precision: false,
            accelerate,
            keep_starts: true,
            screen: Default::default(),
            restarts: 0,
            refine: 0,
            short_runs: Default::default(),
            devices: Vec::new(),
            standard_errors: false,
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
    let one =
        fit(&job(false, 1), bulkem_core::EngineKind::Cpu, 2, &AtomicBool::new(false), &Counters::default()).unwrap();
    let acc = fit(&job(true, 100_000), bulkem_core::EngineKind::Cpu, 2, &AtomicBool::new(false), &Counters::default())
        .unwrap();
    for (o, a) in one.iter().zip(&acc) {
        for (so, sa) in o.starts.as_ref().unwrap().iter().zip(a.starts.as_ref().unwrap()) {
            if so.loglik.is_finite() && sa.loglik.is_finite() {
                assert!(
                    sa.loglik >= so.loglik - 1e-9 * so.loglik.abs(),
                    "start {}: {} < {}",
                    sa.start,
                    sa.loglik,
                    so.loglik
                );
            }
        }
    }
}

#[test]
fn a_start_stuck_at_a_saddle_between_two_groups_is_continued_to_the_maximum() {
    // Two well-separated groups started from one merged component split by
    // a hair: EM moves the halves apart too slowly for the convergence rule
    // to notice, so the start "converges" at the saddle between the groups,
    // where the observed information is not positive definite. The fit is
    // continued from there (saddle.rs) to the maximum that random starts
    // find; without standard errors the saddle is not seen and stays.
    let mut rng = Pcg64::seed_from_u64(21);
    let data = mixture(&mut rng, Family::Normal, 1000, &[0.5, 0.5], &[0.0, 6.0], &[1.0, 1.0]);
    let mean = data.iter().sum::<f64>() / data.len() as f64;
    let sd = (data.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / data.len() as f64).sqrt();
    let best = &run(std::slice::from_ref(&data), Family::Normal, 2, 10, 3, 1)[0];
    assert!(!best.at_saddle() && best.covariance.as_ref().is_some_and(|c| c.is_ok()));
    for accelerate in [false, true] {
        for gap in [1e-7, 1e-5, 1e-3] {
            let init =
                bulkem_core::Params::from_slices(&[0.5, 0.5], &[mean - gap, mean + gap], &[sd, sd * 1.001]).unwrap();
            let job = |standard_errors| Job {
                datasets: vec![data.as_slice()],
                inits: vec![Some(init)],
                settings: Settings {
                    family: Family::Normal,
                    components: vec![2],
                    max_iters: 5000,
                    epsilon: 1e-6,
                    starts: 1,
                    seed: 1,
                    start_scheme: Default::default(),
                    mixed_precision: false,
                    accelerate,
                    keep_starts: false,
                    screen: Default::default(),
                    restarts: 0,
                    refine: 0,
                    short_runs: Default::default(),
                    devices: Vec::new(),
                    standard_errors,
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
            let stuck =
                &fit(&job(false), bulkem_core::EngineKind::Cpu, 1, &AtomicBool::new(false), &Counters::default())
                    .unwrap()[0];
            assert_eq!(stuck.status, Status::Converged, "gap {gap}");
            assert!(best.loglik > stuck.loglik + 100.0, "gap {gap}: {} vs {}", best.loglik, stuck.loglik);
            let f = &fit(&job(true), bulkem_core::EngineKind::Cpu, 1, &AtomicBool::new(false), &Counters::default())
                .unwrap()[0];
            assert_eq!(f.status, Status::Converged, "gap {gap}");
            assert!(f.message.starts_with("continued from a saddle point"), "gap {gap}: {}", f.message);
            assert!(
                !f.at_saddle() && f.covariance.as_ref().is_some_and(|c| c.is_ok()),
                "gap {gap}: {:?}",
                f.covariance
            );
            assert!(
                (f.loglik - best.loglik).abs() < 1e-6 * best.loglik.abs(),
                "gap {gap}: {} vs {}",
                f.loglik,
                best.loglik
            );
            let (p, q) = (f.params.unwrap(), best.params.unwrap());
            for m in 0..2 {
                assert!((p.mu[m] - q.mu[m]).abs() < 1e-3 && (p.shape[m] - q.shape[m]).abs() < 1e-3, "gap {gap}");
            }
            assert!(f.iterations > stuck.iterations);
            assert_eq!(f.starts_at_best, 1);
        }
    }
}
