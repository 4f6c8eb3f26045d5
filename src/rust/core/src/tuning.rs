//! How the engines lay a call's work out, for measurements and tests: never
//! what they compute (results do not depend on any of it). Each knob was an
//! environment variable read deep in the core; now the glue reads them once,
//! at the boundary (R's `control$tuning` first, then the variable named in
//! each field's doc), and the core reads no environment.

/// When R's main thread builds the fits' R lists (the glue's own knob).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ResultDuring {
    /// While the engine works: fits made final, then (on a GPU engine) the
    /// lists of fits to come.
    #[default]
    Auto,
    /// Every list after the engine ended (`0`).
    After,
    /// Lists of fits to come reserved on every engine, the CPU's too (`reserve`).
    Reserve,
    /// Every list made before the engine starts (`ahead`).
    Ahead,
}

/// The knobs of one call. `None`: the measured default, which the field's
/// user documents.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tuning {
    /// cuda-batched: host workers (each with its stream) per GPU.
    /// `BULKEM_WORKERS`.
    pub workers: Option<usize>,
    /// cuda-batched: the fewest chunks a call is cut into where the work
    /// allows. `BULKEM_CHUNK_PIECES`.
    pub chunk_pieces: Option<usize>,
    /// cuda-batched: most bytes one chunk may take, so tests can check that
    /// results do not depend on chunking. `BULKEM_CHUNK_BYTES`.
    pub chunk_bytes: Option<usize>,
    /// cuda-batched: how many times smaller the first and the last chunk
    /// are (1: not smaller). `BULKEM_CHUNK_RAMP`.
    pub chunk_ramp: Option<usize>,
    /// cuda-batched: pack chunks into page-locked memory (false: ordinary
    /// memory, for the measurement of gpu/staging.rs). `BULKEM_PINNED=0`.
    pub pinned: bool,
    /// cuda-batched: how fits map onto threads, forced (`lane`, `warp`,
    /// `group8`, ...). `BULKEM_MAPPING`.
    pub mapping: Option<String>,
    /// The bootstrap on a GPU: blocks of replicates in flight at once.
    /// `BULKEM_BLOCKS_IN_FLIGHT`.
    pub blocks_in_flight: Option<usize>,
    /// When R's main thread builds the result. `BULKEM_RESULT_DURING`.
    pub result_during: ResultDuring,
}

impl Default for Tuning {
    fn default() -> Tuning {
        Tuning {
            workers: None,
            chunk_pieces: None,
            chunk_bytes: None,
            chunk_ramp: None,
            pinned: true,
            mapping: None,
            blocks_in_flight: None,
            result_during: ResultDuring::Auto,
        }
    }
}

impl Tuning {
    /// The knob `name` (a field's name) set from its text, as R or the
    /// environment give it; an error names what was wrong. Counts must be
    /// positive whole numbers.
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), String> {
        let count = || match value.trim().parse::<usize>() {
            Ok(n) if n > 0 => Ok(Some(n)),
            _ => Err(format!("`{name}` must be a positive whole number, not \"{value}\"")),
        };
        match name {
            "workers" => self.workers = count()?,
            "chunk_pieces" => self.chunk_pieces = count()?,
            "chunk_bytes" => self.chunk_bytes = count()?,
            "chunk_ramp" => self.chunk_ramp = count()?,
            "blocks_in_flight" => self.blocks_in_flight = count()?,
            "pinned" => self.pinned = value != "0" && !value.eq_ignore_ascii_case("false"),
            "mapping" => self.mapping = Some(value.to_string()),
            "result_during" => {
                self.result_during = match value {
                    "0" => ResultDuring::After,
                    "reserve" => ResultDuring::Reserve,
                    "ahead" => ResultDuring::Ahead,
                    _ => ResultDuring::Auto,
                }
            }
            _ => return Err(format!("unknown tuning knob `{name}`; the knobs are: {}", Tuning::NAMES.join(", "))),
        }
        Ok(())
    }

    /// Every knob's name, and the environment variable it is also read from.
    pub const NAMES: [&'static str; 8] = [
        "workers",
        "chunk_pieces",
        "chunk_bytes",
        "chunk_ramp",
        "pinned",
        "mapping",
        "blocks_in_flight",
        "result_during",
    ];

    /// The environment variable of knob `name`: `BULKEM_` and its name in
    /// capitals.
    pub fn variable(name: &str) -> String {
        format!("BULKEM_{}", name.to_ascii_uppercase())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_knob_is_set_by_its_name_and_counts_are_checked() {
        let mut t = Tuning::default();
        for name in Tuning::NAMES {
            let v = if name == "mapping" || name == "result_during" { "reserve" } else { "3" };
            t.set(name, v).unwrap();
        }
        assert_eq!(t.workers, Some(3));
        assert_eq!(t.blocks_in_flight, Some(3));
        assert_eq!(t.result_during, ResultDuring::Reserve);
        assert!(t.set("chunk_bytes", "0").is_err());
        assert!(t.set("chunk_bytes", "x").is_err());
        assert!(t.set("no_such", "1").is_err());
        t.set("pinned", "0").unwrap();
        assert!(!t.pinned);
        assert_eq!(Tuning::variable("chunk_pieces"), "BULKEM_CHUNK_PIECES");
    }
}
