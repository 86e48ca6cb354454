//! The data behind seed 002's Figs. 4.3 and 4.7 as the experiment writes it: each request's
//! throughput in buckets of consecutive requests (`request-throughput.csv`) and each block's
//! erases and page programs (`wear.csv`), compact enough to commit.

/// Columns of `request-throughput.csv` (Fig. 4.3): each request's throughput in issue order
/// (its bytes over its latency, MB = 10^6 B as in every file here), in buckets of consecutive
/// requests, at most [`REQUEST_BUCKETS_MAX`] per trace and FTL, the last one possibly shorter.
/// `first_request` counts from 0; `mb_per_sec_p50` is the bucket's median (the lower middle
/// value of an even count). The minimum is kept because the thesis' point is the requests that
/// collect garbage, near 0 MB/s among requests at the sequential rate.
pub const REQUEST_THROUGHPUT_COLUMNS: [&str; 8] = ["trace", "ftl", "first_request", "requests", "mb_per_sec_min", "mb_per_sec_p50", "mb_per_sec_max", "mb_per_sec_mean"];

/// At most this many buckets per run in `request-throughput.csv`: the thesis' traces have
/// tens of thousands of requests, and 400 points still show a panel's shape at its width.
pub const REQUEST_BUCKETS_MAX: usize = 400;

/// Columns of `wear.csv` (Fig. 4.7): one row per block in block-id order (`block_in_lun` × the
/// parallel units + `parallel_unit`), its erases and its pages' programs in page order,
/// run-length coded as `COUNTxPAGES` runs joined by spaces (`3x30 2x2`: pages 0–29 programmed
/// 3 times, pages 30 and 31 twice), since an FTL that writes whole blocks leaves one run per block.
pub const WEAR_COLUMNS: [&str; 6] = ["trace", "ftl", "parallel_unit", "block_in_lun", "erases", "page_programs"];

/// One bucket of [`REQUEST_THROUGHPUT_COLUMNS`].
#[derive(Clone, Debug, PartialEq)]
pub struct RequestBucket {
    pub first_request: usize,
    pub requests: usize,
    pub mb_per_sec_min: f64,
    pub mb_per_sec_p50: f64,
    pub mb_per_sec_max: f64,
    pub mb_per_sec_mean: f64,
}

/// `mb_per_sec` (one value per request, in issue order) in at most [`REQUEST_BUCKETS_MAX`]
/// buckets of ⌈n / max⌉ consecutive requests.
pub fn request_buckets(mb_per_sec: &[f32]) -> Vec<RequestBucket> {
    let per_bucket = mb_per_sec.len().div_ceil(REQUEST_BUCKETS_MAX).max(1);
    mb_per_sec
        .chunks(per_bucket)
        .enumerate()
        .map(|(k, chunk)| {
            let mut sorted: Vec<f64> = chunk.iter().map(|&v| v as f64).collect();
            sorted.sort_by(f64::total_cmp);
            RequestBucket {
                first_request: k * per_bucket,
                requests: chunk.len(),
                mb_per_sec_min: sorted[0],
                mb_per_sec_p50: sorted[(sorted.len() - 1) / 2],
                mb_per_sec_max: sorted[sorted.len() - 1],
                mb_per_sec_mean: sorted.iter().sum::<f64>() / sorted.len() as f64,
            }
        })
        .collect()
}

/// A block's programs per page as `wear.csv` writes them ([`WEAR_COLUMNS`]).
pub fn page_program_runs(pages: &[u32]) -> String {
    let mut runs: Vec<(u32, usize)> = Vec::new();
    for &count in pages {
        match runs.last_mut() {
            Some((c, n)) if *c == count => *n += 1,
            _ => runs.push((count, 1)),
        }
    }
    runs.iter().map(|(count, pages)| format!("{count}x{pages}")).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_go_in_at_most_the_cap_of_consecutive_buckets_keeping_each_ones_minimum() {
        // 1001 requests: buckets of 3, the last one of 2.
        let mut rates: Vec<f32> = (0..1001).map(|i| 300.0 - (i % 3) as f32).collect();
        rates[500] = 0.25;
        let buckets = request_buckets(&rates);
        assert_eq!(buckets.len(), 334);
        assert!(buckets.len() <= REQUEST_BUCKETS_MAX);
        assert_eq!(buckets.iter().map(|b| b.requests).sum::<usize>(), 1001);
        assert!(buckets.windows(2).all(|w| w[1].first_request == w[0].first_request + w[0].requests), "consecutive, in issue order");
        assert_eq!(buckets[0], RequestBucket { first_request: 0, requests: 3, mb_per_sec_min: 298.0, mb_per_sec_p50: 299.0, mb_per_sec_max: 300.0, mb_per_sec_mean: 299.0 });
        // Request 500 (bucket 166: requests 498..=500) collected garbage: its minimum shows it.
        assert_eq!((buckets[166].mb_per_sec_min, buckets[166].mb_per_sec_p50, buckets[166].mb_per_sec_max), (0.25, 299.0, 300.0));
        assert_eq!((buckets[333].first_request, buckets[333].requests, buckets[333].mb_per_sec_p50), (999, 2, 299.0), "the lower middle of 300 and 299");
        assert_eq!(request_buckets(&[7.0]).len(), 1);
        assert!(request_buckets(&[]).is_empty());
        assert_eq!(request_buckets(&vec![1.0; 400]).len(), 400, "up to the cap, one request a bucket");
    }

    #[test]
    fn page_programs_are_run_length_coded_in_page_order() {
        assert_eq!(page_program_runs(&[3; 32]), "3x32");
        assert_eq!(page_program_runs(&[3, 3, 2, 3]), "3x2 2x1 3x1");
        assert_eq!(page_program_runs(&[0, 0]), "0x2");
        assert_eq!(page_program_runs(&[]), "");
    }
}
