//! Quick speed check of the bench workloads, for profiling:
//! `cargo run --release -p sim --example quickbench -- [HOST] [SIMULATED_MS] [NAME_FILTER]`
//! (HOST defaults to `free`, SIMULATED_MS to 1000; the filter picks workloads whose
//! name contains it).
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let host_name = args.first().map_or("free", String::as_str);
    let ms: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1000);
    let filter = args.get(2).map_or("", String::as_str);
    let host = match host::host(host_name) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("quickbench: {e}");
            std::process::exit(2);
        }
    };
    for w in sim::bench::workloads() {
        if !w.name.contains(filter) {
            continue;
        }
        let r = sim::bench::run_on(&w, ms, &host);
        println!(
            "{}: {} req in {:.3}s wall, {:.0} req/s, peak {:?}",
            r.name,
            r.requests,
            r.wall_secs,
            r.rate(),
            sim::bench::peak_rss_bytes()
        );
    }
}
