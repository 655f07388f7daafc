// tinytpu-chip: the co-simulation binary of the two-core chip (doc/chip.md). Reads a chip bundle
// (`tinytpu-chip 1 ...`: shared HBM records, then `core 0`, `core 1` sections, then `run`),
// checks it section by section with the single-core reader (rtl/sim/bundle_reader.cpp, errors on
// the chip bundle's own lines, the messages of tinytpu/chipbundle.py), clocks sim_chip and prints
// the result in the format of tinytpu.chipbundle.format_chip_result.
//
//   tinytpu-chip [--trace waves] bundle.txt|-   one bundle; exit 0 all ok, 1 a trap/timeout, 2 bad bundle
//   tinytpu-chip --server                       bundles on stdin, each ended by `%end`; answers end with `%end <rc>`
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

#include "Vsim_chip.h"
#include "Vsim_chip__Dpi.h"
#include "bundle_reader.h"
#include "hbm_store.h"
#include "sim_config.h"
#include "verilated.h"
#if VM_TRACE
#include TT_TRACE_HEADER
#endif
#include "sim_clock.h"

namespace {

enum { K_NONE = 0, K_IMEM = 1, K_VMEM = 2, K_PSUM = 3, K_SREG = 4, K_HBM = 5 };
const int CORES = 2;
const SimConfig CFG = {TT_N, TT_VMEM_TILES, TT_PSUM_TILES, TT_IMEM_WORDS, (long long)TT_HBM_TILES, TT_HBM_LATENCY,
                       TT_HBM_BW_NUM, TT_HBM_BW_DEN};

struct Load { int core, kind, addr; uint64_t word; const std::vector<uint32_t> *lanes; };
struct DumpTile { int core, kind, addr; std::vector<uint32_t> lanes; const Dump *dump = nullptr; };
struct CoreResult { unsigned perf[64] = {}; std::string status; unsigned cycles = 0; bool bad = false; };

struct State {
  Bundle shared;
  Bundle core[CORES];
  std::vector<Load> loads;
  size_t load_i = 0, cur = 0;
  std::vector<DumpTile> dumps;
  size_t dump_i = 0;
  DumpTile *dcur = nullptr;
  CoreResult res[CORES];
  unsigned long long chip_cycles = 0;
  int err = 0;
} S;

std::vector<std::string> lines_of(const std::string &t) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : t) {
    if (c == '\n') { out.push_back(cur); cur.clear(); }
    else cur += c;
  }
  if (!cur.empty()) out.push_back(cur);
  for (auto &l : out) if (!l.empty() && l.back() == '\r') l.pop_back();
  return out;
}

std::vector<std::string> tokens(const std::string &s) {
  std::istringstream is(s);
  std::vector<std::string> out;
  std::string t;
  while (is >> t) out.push_back(t);
  return out;
}

// one section as a single-core bundle; errors on the chip bundle's line numbers
Bundle sub(const std::string &header, const std::vector<std::pair<int, std::string>> &ls, const std::pair<int, std::string> &run) {
  std::vector<std::pair<int, std::string>> rows = {{0, header}};
  rows.insert(rows.end(), ls.begin(), ls.end());
  rows.push_back(run);
  std::string text;
  for (auto &r : rows) text += r.second + "\n";
  try {
    return parse_bundle(text, CFG);
  } catch (BundleError &e) {
    size_t i = std::min((size_t)std::max(e.line, 1), rows.size()) - 1;
    throw BundleError{rows[i].first ? rows[i].first : 1, e.why};
  }
}

// the checks and messages of tinytpu/chipbundle.py parse()
void parse_chip(const std::string &text) {
  auto lines = lines_of(text);
  std::string header;
  int cur = -1;
  std::pair<int, std::string> run = {0, ""};
  std::vector<std::pair<int, std::string>> shared, sec[CORES];
  int where[CORES] = {0, 0};
  for (size_t i = 0; i < lines.size(); i++) {
    int ln = (int)i + 1;
    std::string s = lines[i].substr(0, lines[i].find('#'));
    auto tok = tokens(s);
    if (tok.empty()) continue;
    if (header.empty()) {
      if (tok[0] != "tinytpu-chip")
        throw BundleError{ln, "a chip bundle starts with `tinytpu-chip 1 N=...` (got '" + tok[0] + "'; a `tinytpu-bundle` is a single-core bundle)"};
      header = "tinytpu-bundle";
      for (size_t j = 1; j < tok.size(); j++) header += " " + tok[j];
      continue;
    }
    if (run.first) throw BundleError{ln, "record `" + tok[0] + "` after `run` (line " + std::to_string(run.first) + "): `run` must be the last record"};
    if (tok[0] == "run") {
      run = {ln, s};
    } else if (tok[0] == "core") {
      long long k = -1;
      bool ok = tok.size() == 2;
      if (ok) {
        try { size_t p; k = std::stoll(tok[1], &p, 0); ok = p == tok[1].size(); } catch (...) { ok = false; }
      }
      if (!ok) throw BundleError{ln, "`core` takes one core number"};
      if (k < 0 || k >= CORES) throw BundleError{ln, "core " + std::to_string(k) + ": the chip has 2 cores (0..1)"};
      if (where[k]) throw BundleError{ln, "core " + std::to_string(k) + ": a second section (the first on line " + std::to_string(where[k]) + ")"};
      where[k] = ln;
      cur = (int)k;
    } else if (tok[0] == "hbm" || tok[0] == "hbmbin" || tok[0] == "binfile" || tok[0] == "resultfile" ||
               (tok[0] == "dump" && tok.size() > 1 && tok[1] == "hbm")) {
      if (cur >= 0) throw BundleError{ln, "`" + (tok[0] == "dump" ? std::string("dump hbm") : tok[0]) + "` inside the section of core " +
                                              std::to_string(cur) + ": HBM is shared, its records come before the first `core`"};
      shared.push_back({ln, lines[i]});
    } else if (cur < 0) {
      throw BundleError{ln, "record `" + tok[0] + "` before the first `core` section (only HBM records are shared)"};
    } else {
      sec[cur].push_back({ln, lines[i]});
    }
  }
  if (header.empty()) throw BundleError{(int)lines.size() + 1, "missing header `tinytpu-chip 1 N=...`"};
  if (!run.first) throw BundleError{(int)lines.size() + 1, "missing `run <watchdog cycles>` record"};
  for (int k = 0; k < CORES; k++)
    if (!where[k]) throw BundleError{run.first, "missing `core " + std::to_string(k) + "` section (the chip runs 2 programs)"};
  S.shared = sub(header, shared, run);
  for (int k = 0; k < CORES; k++) S.core[k] = sub(header, sec[k], run);
}

void prepare() {
  for (int k = 0; k < CORES; k++) {
    Bundle &b = S.core[k];
    for (size_t pc = 0; pc < b.program.size(); pc++) S.loads.push_back({k, K_IMEM, (int)pc, b.program[pc], nullptr});
    for (auto &t : b.vmem) S.loads.push_back({k, K_VMEM, t.addr, 0, &t.lanes});
    for (auto &t : b.psum) S.loads.push_back({k, K_PSUM, t.addr, 0, &t.lanes});
    for (auto &r : b.sregs) S.loads.push_back({k, K_SREG, r.first, r.second, nullptr});
    for (auto &d : b.dumps) {
      if (d.kind == "sreg") S.dumps.push_back({k, K_SREG, 0, std::vector<uint32_t>(16)});
      else for (long long i = 0; i < d.count; i++)
        S.dumps.push_back({k, d.kind == "vmem" ? K_VMEM : K_PSUM, (int)(d.addr + i), std::vector<uint32_t>(CFG.N * CFG.N)});
    }
  }
  hbm_store().configure(CFG.N, CFG.HBM_TILES);
  for (auto &r : S.shared.hbm) hbm_store().write_region(r.addr, r.count, r.lanes.data());
}

std::string result_text(int &rc) {
  std::ostringstream o;
  for (auto &d : S.shared.dumps) {
    std::vector<uint32_t> lanes((size_t)d.count * CFG.N * CFG.N, 0u);
    hbm_store().read_region(d.addr, d.count, lanes.data());
    write_hbm_dump(o, S.shared, d, lanes, CFG);
  }
  unsigned mx = 0;
  for (int k = 0; k < CORES; k++) mx = std::max(mx, S.res[k].cycles);
  o << "chip cycles " << mx << '\n';
  rc = 0;
  for (int k = 0; k < CORES; k++) {
    o << "core " << k << '\n';
    for (auto &d : S.dumps) {
      if (d.core != k) continue;
      o << (d.kind == K_SREG ? "sreg" : d.kind == K_VMEM ? "vmem" : "psum");
      if (d.kind != K_SREG) o << ' ' << d.addr;
      for (uint32_t v : d.lanes) o << ' ' << (int32_t)v;
      o << '\n';
    }
    o << "cycles " << S.res[k].cycles << "\nperf";
    for (int i = 0; i < TT_NUM_PERF; i++) o << ' ' << TT_PERF_NAMES[i] << '=' << S.res[k].perf[i];
    o << '\n' << S.res[k].status << '\n';
    if (S.res[k].bad) rc = 1;
  }
  return o.str();
}

struct Sim : SimClock<Vsim_chip> {
  explicit Sim(const char *trace) : SimClock<Vsim_chip>(trace, "tinytpu-chip") {}
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// DPI-C: called by sim_chip's loader
extern "C" int tc_load_next() {
  if (S.load_i >= S.loads.size()) return K_NONE;
  S.cur = S.load_i++;
  return S.loads[S.cur].kind;
}
extern "C" int tc_load_core() { return S.cur < S.loads.size() ? S.loads[S.cur].core : 0; }
extern "C" int tc_load_addr() { return S.cur < S.loads.size() ? S.loads[S.cur].addr : 0; }
extern "C" unsigned long long tc_load_word() { return S.cur < S.loads.size() ? S.loads[S.cur].word : 0; }
extern "C" unsigned tc_load_lane(int lane) {
  auto *l = S.cur < S.loads.size() ? S.loads[S.cur].lanes : nullptr;
  return l && lane < (int)l->size() ? (*l)[lane] : 0;
}
extern "C" long long tc_max_cycles() { return S.shared.max_cycles; }
extern "C" int tc_dump_next() {
  if (S.dump_i >= S.dumps.size()) return K_NONE;
  S.dcur = &S.dumps[S.dump_i++];
  return S.dcur->kind;
}
extern "C" int tc_dump_core() { return S.dcur ? S.dcur->core : 0; }
extern "C" int tc_dump_addr() { return S.dcur ? S.dcur->addr : 0; }
extern "C" void tc_dump_lane(int lane, unsigned value) {
  if (S.dcur && lane >= 0 && lane < (int)S.dcur->lanes.size()) S.dcur->lanes[lane] = value;
}
extern "C" void tc_report_perf(int core, int idx, unsigned value) {
  if (core >= 0 && core < CORES && idx >= 0 && idx < 64) S.res[core].perf[idx] = value;
}
extern "C" void tc_report(int core, int status, int pc, unsigned cycles, int timeout) {
  if (core < 0 || core >= CORES) return;
  CoreResult &r = S.res[core];
  r.cycles = cycles;
  r.bad = timeout || status != 0;
  if (timeout) r.status = "status timeout pc=" + std::to_string(pc);
  else if (status == 0) r.status = "status ok";
  else r.status = std::string("status trap ") + TT_TRAP_NAMES[status] + " pc=" + std::to_string(pc);
}
extern "C" void tc_report_chip(unsigned long long cycles, int err) {
  S.chip_cycles = cycles;
  S.err = err;
}

static int run_one(Sim &sim, const std::string &text, std::string &out, std::string &err) {
  S = State();
  try {
    parse_chip(text);
  } catch (BundleError &e) {
    err = "error line " + std::to_string(e.line) + ": " + e.why + "\n";
    return 2;
  }
  prepare();
  sim.run();
  int rc = 0;
  out = result_text(rc);
  return rc;
}

int main(int argc, char **argv) {
  const char *trace = nullptr, *path = nullptr;
  bool server = false;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--trace") && i + 1 < argc) trace = argv[++i];
    else if (!strcmp(argv[i], "--server")) server = true;
    else if (argv[i][0] == '+') continue;
    else if (!path) path = argv[i];
    else { fprintf(stderr, "usage: %s [--trace waves] (bundle.txt | - | --server)\n", argv[0]); return 2; }
  }
  if (!server && !path) { fprintf(stderr, "usage: %s [--trace waves] (bundle.txt | - | --server)\n", argv[0]); return 2; }
  Sim sim(trace);
  if (server) return serve(sim, run_one);
  std::string text;
  if (!read_bundle(path, text, "tinytpu-chip")) return 2;
  std::string out, err;
  int rc = run_one(sim, text, out, err);
  fputs(out.c_str(), stdout);
  fputs(err.c_str(), stderr);
  return rc;
}
