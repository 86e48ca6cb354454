// zonekit-ycsb: YCSB-C on RocksDB as seed 004's thesis ran it (§5.2), so the block stream a
// cache sees comes from the real stack: 16-byte keys and 1 KiB values loaded by one thread,
// then 8 threads each reading with YCSB's scrambled zipfian, RocksDB with direct reads (the
// thesis' "direct" option: no page cache between RocksDB and the cache). RocksDB's options
// are what YCSB's RocksDB binding sets without an options file (IncreaseParallelism,
// OptimizeLevelStyleCompaction); the key chooser is Zonekit's own port of YCSB's
// (crates/zonekit-capi/src/ycsb.rs), so synthetic and captured runs draw the same records.
//
//   zonekit-ycsb load --db DIR --records N [--value-bytes 1024]
//   zonekit-ycsb run  --db DIR --records N [--value-bytes 1024] [--threads 8] [--reads-per-thread N] [--seed S]
//
// `load` returns once every flush and compaction it started has finished, so the run phase
// starts from a settled tree. `run` checks every value it reads against the one loaded (a
// wrong byte anywhere in the stack under RocksDB fails the run) and exits non-zero on any
// miss or mismatch. Keys are "user" + 12 hex digits of a bijective scramble of the record
// number (YCSB's hashed insert order, kept unique at 16 bytes).

#include <rocksdb/db.h>
#include <rocksdb/options.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

extern "C" {
struct ZkYcsbZipfian;
ZkYcsbZipfian* zk_ycsb_zipfian_new(uint64_t records, uint64_t seed);
uint64_t zk_ycsb_zipfian_next(ZkYcsbZipfian* z);
void zk_ycsb_zipfian_free(ZkYcsbZipfian* z);
}

namespace {

struct Args {
    std::string command;
    std::string db;
    uint64_t records = 0;
    uint64_t value_bytes = 1024;
    uint64_t threads = 8;
    uint64_t reads_per_thread = 0;  // 0: records / threads (one read per record overall)
    uint64_t seed = 1;
};

[[noreturn]] void usage(const std::string& why) {
    std::fprintf(stderr,
                 "zonekit-ycsb: %s\n"
                 "usage: zonekit-ycsb load --db DIR --records N [--value-bytes B]\n"
                 "       zonekit-ycsb run  --db DIR --records N [--value-bytes B] [--threads T] [--reads-per-thread N] [--seed S]\n",
                 why.c_str());
    std::exit(2);
}

uint64_t parse_count(const std::string& flag, const char* text, uint64_t min, uint64_t max) {
    char* end = nullptr;
    errno = 0;
    unsigned long long v = std::strtoull(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || text[0] == '-' || v < min || v > max) {
        usage(flag + " " + text + ": not a whole number in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
    }
    return v;
}

Args parse(int argc, char** argv) {
    if (argc < 2) usage("no command");
    Args a;
    a.command = argv[1];
    if (a.command != "load" && a.command != "run") usage("unknown command " + a.command);
    for (int i = 2; i < argc; i += 2) {
        std::string flag = argv[i];
        if (i + 1 >= argc) usage(flag + ": needs a value");
        const char* v = argv[i + 1];
        if (flag == "--db") a.db = v;
        else if (flag == "--records") a.records = parse_count(flag, v, 1, 1ull << 40);
        else if (flag == "--value-bytes") a.value_bytes = parse_count(flag, v, 8, 1 << 20);
        else if (flag == "--threads" && a.command == "run") a.threads = parse_count(flag, v, 1, 1024);
        else if (flag == "--reads-per-thread" && a.command == "run") a.reads_per_thread = parse_count(flag, v, 1, 1ull << 40);
        else if (flag == "--seed" && a.command == "run") a.seed = parse_count(flag, v, 0, UINT64_MAX);
        else usage(flag + ": not a flag of " + a.command);
    }
    if (a.db.empty()) usage("--db is required");
    if (a.records == 0) usage("--records is required");
    if (a.reads_per_thread == 0) a.reads_per_thread = (a.records + a.threads - 1) / a.threads;
    return a;
}

uint64_t splitmix(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

// A bijection of [0, 2^48): an odd multiplier, then an xor-shift (both invertible mod 2^48).
std::string key_of(uint64_t record) {
    const uint64_t mask = (1ull << 48) - 1;
    uint64_t x = (record * 0x9E3779B97F4Bull) & mask;
    x ^= x >> 24;
    char k[17];
    std::snprintf(k, sizeof k, "user%012" PRIx64, x);
    return std::string(k, 16);
}

// Incompressible and different per record, so every value read can be checked.
void value_of(uint64_t record, std::string& v, size_t bytes) {
    v.resize(bytes);
    for (size_t at = 0; at < bytes; at += 8) {
        uint64_t w = splitmix(record * 0x100000001B3ull + at);
        std::memcpy(&v[at], &w, std::min<size_t>(8, bytes - at));
    }
}

rocksdb::Options options() {
    rocksdb::Options o;
    o.create_if_missing = true;
    o.IncreaseParallelism(static_cast<int>(std::thread::hardware_concurrency() * 2));
    o.OptimizeLevelStyleCompaction();
    o.use_direct_reads = true;
    return o;
}

std::unique_ptr<rocksdb::DB> open(const Args& a) {
    rocksdb::DB* db = nullptr;
    rocksdb::Status s = rocksdb::DB::Open(options(), a.db, &db);
    if (!s.ok()) {
        std::fprintf(stderr, "zonekit-ycsb: opening %s: %s\n", a.db.c_str(), s.ToString().c_str());
        std::exit(1);
    }
    return std::unique_ptr<rocksdb::DB>(db);
}

double seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

int load(const Args& a) {
    auto db = open(a);
    auto start = std::chrono::steady_clock::now();
    std::string v;
    for (uint64_t r = 0; r < a.records; r++) {
        value_of(r, v, a.value_bytes);
        rocksdb::Status s = db->Put(rocksdb::WriteOptions(), key_of(r), v);
        if (!s.ok()) {
            std::fprintf(stderr, "zonekit-ycsb: put of record %" PRIu64 ": %s\n", r, s.ToString().c_str());
            return 1;
        }
    }
    rocksdb::Status s = db->Flush(rocksdb::FlushOptions());
    if (!s.ok()) {
        std::fprintf(stderr, "zonekit-ycsb: flush: %s\n", s.ToString().c_str());
        return 1;
    }
    // Settle: the run phase starts from the tree the load leaves once compaction is done.
    for (;;) {
        uint64_t pending = 0, compactions = 0, flushes = 0;
        db->GetIntProperty("rocksdb.compaction-pending", &pending);
        db->GetIntProperty("rocksdb.num-running-compactions", &compactions);
        db->GetIntProperty("rocksdb.num-running-flushes", &flushes);
        if (pending + compactions + flushes == 0) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    std::string levels;
    db->GetProperty("rocksdb.levelstats", &levels);
    std::printf("zonekit-ycsb load: %" PRIu64 " records of %" PRIu64 " B in %.1f s\n%s", a.records, a.value_bytes, seconds_since(start), levels.c_str());
    return 0;
}

int run(const Args& a) {
    auto db = open(a);
    std::atomic<uint64_t> misses{0}, wrong{0};
    auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> readers;
    for (uint64_t t = 0; t < a.threads; t++) {
        readers.emplace_back([&, t] {
            ZkYcsbZipfian* z = zk_ycsb_zipfian_new(a.records, a.seed * 1000003 + t);
            std::string got, want;
            for (uint64_t i = 0; i < a.reads_per_thread; i++) {
                uint64_t r = zk_ycsb_zipfian_next(z);
                rocksdb::Status s = db->Get(rocksdb::ReadOptions(), key_of(r), &got);
                if (!s.ok()) {
                    if (misses++ == 0) std::fprintf(stderr, "zonekit-ycsb: get of record %" PRIu64 ": %s\n", r, s.ToString().c_str());
                    continue;
                }
                value_of(r, want, a.value_bytes);
                if (got != want && wrong++ == 0) std::fprintf(stderr, "zonekit-ycsb: record %" PRIu64 " read back different from what was loaded\n", r);
            }
            zk_ycsb_zipfian_free(z);
        });
    }
    for (auto& t : readers) t.join();
    double s = seconds_since(start);
    uint64_t reads = a.threads * a.reads_per_thread;
    std::printf("zonekit-ycsb run: %" PRIu64 " reads by %" PRIu64 " threads over %" PRIu64 " records in %.1f s (%.0f reads/s), %" PRIu64 " missing, %" PRIu64 " wrong\n", reads,
                a.threads, a.records, s, reads / s, misses.load(), wrong.load());
    return misses.load() + wrong.load() == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    Args a = parse(argc, argv);
    return a.command == "load" ? load(a) : run(a);
}
