// Bundle v1/v2 reader: a line-for-line port of tinytpu/bundle.py parse() and the directive part of
// tinytpu/asm.py assemble_lines(), down to the order of the checks and Python's repr() and int
// formatting in the messages. tests/test_cosim.py and tests/test_bundle_hbm.py feed the same bad
// bundles to both. Version 2 reads HBM regions from a side file of raw little-endian uint32 lanes
// (`binfile`, `hbmbin`) and writes `dump hbm` lanes into the bundle's `resultfile` (doc/bundle.md).
#include "bundle_reader.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fcntl.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <tuple>


namespace {

struct Fail { std::string why; };  // a ValueError(why) inside one line

// ---------------------------------------------------------------------------------------------
// Python string helpers (ASCII subset of str.split/strip/splitlines/repr)
bool is_ws(char c) { return c == ' ' || (c >= '\t' && c <= '\r') || (c >= '\x1c' && c <= '\x1f'); }

std::string strip(const std::string &s) {
  size_t a = 0, b = s.size();
  while (a < b && is_ws(s[a])) a++;
  while (b > a && is_ws(s[b - 1])) b--;
  return s.substr(a, b - a);
}

std::vector<std::string> split_ws(const std::string &s, int maxsplit = -1) {
  std::vector<std::string> out;
  size_t i = 0, n = s.size();
  while (true) {
    while (i < n && is_ws(s[i])) i++;
    if (i >= n) break;
    if (maxsplit >= 0 && (int)out.size() == maxsplit) {  // the rest, trailing whitespace stripped
      size_t b = n;
      while (b > i && is_ws(s[b - 1])) b--;
      out.push_back(s.substr(i, b - i));
      break;
    }
    size_t j = i;
    while (j < n && !is_ws(s[j])) j++;
    out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

std::vector<std::string> splitlines(const std::string &s) {
  std::vector<std::string> out;
  std::string cur;
  size_t i = 0;
  bool open = false;
  for (; i < s.size(); i++) {
    char c = s[i];
    if (c == '\n' || c == '\r' || c == '\x0b' || c == '\x0c' || (c >= '\x1c' && c <= '\x1e')) {
      if (c == '\r' && i + 1 < s.size() && s[i + 1] == '\n') i++;
      out.push_back(cur);
      cur.clear();
      open = false;
    } else {
      cur += c;
      open = true;
    }
  }
  if (open) out.push_back(cur);
  return out;
}

std::string repr(const std::string &s) {
  char q = (s.find('\'') != std::string::npos && s.find('"') == std::string::npos) ? '"' : '\'';
  std::string out(1, q);
  for (unsigned char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == (unsigned char)q) { out += '\\'; out += (char)c; }
    else if (c == '\t') out += "\\t";
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c < 0x20 || c == 0x7f) { char b[8]; snprintf(b, sizeof b, "\\x%02x", c); out += b; }
    else out += (char)c;
  }
  return out + q;
}

std::string lower(std::string s) {
  for (auto &c : s) if (c >= 'A' && c <= 'Z') c = c - 'A' + 'a';
  return s;
}

std::string cut_comment(const std::string &s, const char *chars) {
  size_t p = s.find_first_of(chars);
  return p == std::string::npos ? s : s.substr(0, p);
}

// ---------------------------------------------------------------------------------------------
// integers: Python ints are unbounded, so keep the exact decimal text for messages and a 128-bit
// value (with a flag when it does not fit) for range checks
struct Num {
  __int128 v = 0;
  bool big = false;    // |value| >= 2^120: outside every range
  std::string dec;     // Python's str(int)
  bool lt(long long x) const { return big ? v < 0 : v < (__int128)x; }
  bool gt(long long x) const { return big ? v > 0 : v > (__int128)x; }
  bool in(long long lo, long long hi) const { return !lt(lo) && !gt(hi); }
};

std::string i128str(__int128 v) {
  if (v == 0) return "0";
  bool neg = v < 0;
  unsigned __int128 m = neg ? -(unsigned __int128)v : (unsigned __int128)v;
  std::string s;
  while (m) { s += char('0' + int(m % 10)); m /= 10; }
  if (neg) s += '-';
  return std::string(s.rbegin(), s.rend());
}

// `[+-]?(0x[0-9a-f]+|0b[01]+|[0-9]+)` (any case); leading-zero decimals are decimal
Num parse_int(const std::string &tok) {
  size_t i = 0;
  bool neg = false;
  if (i < tok.size() && (tok[i] == '+' || tok[i] == '-')) neg = tok[i++] == '-';
  int base = 10;
  std::string body = tok.substr(i);
  if (body.size() > 2 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X')) base = 16, body = body.substr(2);
  else if (body.size() > 2 && body[0] == '0' && (body[1] == 'b' || body[1] == 'B')) base = 2, body = body.substr(2);
  bool ok = !body.empty();
  for (char c : body) {
    int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : 99;
    if (d >= base) ok = false;
  }
  if (!ok) throw Fail{"malformed number " + repr(tok)};
  Num n;
  std::vector<int> digs;  // decimal, little endian
  unsigned __int128 m = 0;
  for (char c : body) {
    int d = (c >= '0' && c <= '9') ? c - '0' : (c | 0x20) - 'a' + 10;
    int carry = d;
    for (auto &x : digs) { int t = x * base + carry; x = t % 10; carry = t / 10; }
    while (carry) { digs.push_back(carry % 10); carry /= 10; }
    if (!n.big) {
      m = m * base + d;
      if (m >> 120) n.big = true;
    }
  }
  while (digs.size() > 1 && digs.back() == 0) digs.pop_back();
  if (digs.empty()) digs.push_back(0);
  bool zero = digs.size() == 1 && digs[0] == 0;
  n.dec = (neg && !zero) ? "-" : "";
  for (auto it = digs.rbegin(); it != digs.rend(); ++it) n.dec += char('0' + *it);
  n.v = n.big ? (neg ? -1 : 1) : (neg ? -(__int128)m : (__int128)m);
  return n;
}

uint32_t check_value(const Num &v, const char *what = "value") {
  if (!v.in(-(1LL << 31), (1LL << 32) - 1)) throw Fail{std::string(what) + " " + v.dec + " out of range [-2^31, 2^32-1]"};
  return (uint32_t)(uint64_t)(long long)v.v;
}

std::vector<Num> values(const std::string &text) {  // re.split(r"[\s,]+", text.strip())
  std::vector<Num> out;
  std::string s = strip(text), cur;
  for (char c : s + " ") {
    if (is_ws(c) || c == ',') {
      if (!cur.empty()) out.push_back(parse_int(cur));
      cur.clear();
    } else cur += c;
  }
  return out;
}

// records.HEADER_FIELDS, in order, with the model's value and the default (optional fields are
// written only when they differ from it)
const char *const HEADER_FIELDS[] = {"N", "VMEM_TILES", "PSUM_TILES", "IMEM_WORDS", "HBM_TILES", "HBM_LATENCY", "HBM_BW_NUM", "HBM_BW_DEN"};
long long field_value(const SimConfig &c, int i) {
  const long long v[] = {c.N, c.VMEM_TILES, c.PSUM_TILES, c.IMEM_WORDS, c.HBM_TILES, c.HBM_LATENCY, c.HBM_BW_NUM, c.HBM_BW_DEN};
  return v[i];
}
const long long FIELD_DEFAULT[] = {0, 0, 0, 4096, 1LL << 20, 100, 1, 1};

std::string header_text(const SimConfig &c) {
  std::string h = "tinytpu-bundle 1";
  for (int i = 0; i < 8; i++)
    if (i < 3 || field_value(c, i) != FIELD_DEFAULT[i]) h += std::string(" ") + HEADER_FIELDS[i] + "=" + std::to_string(field_value(c, i));
  return h;
}

// returns the format version (1 or 2)
int parse_header(const std::string &s, const SimConfig &cfg) {
  auto toks = split_ws(s);
  if (toks[0] != "tinytpu-bundle") throw Fail{"missing header: expected `" + header_text(cfg) + "`, got " + repr(toks[0])};
  if (toks.size() < 2 || (toks[1] != "1" && toks[1] != "2"))
    throw Fail{"unsupported bundle version " + (toks.size() > 1 ? toks[1] : std::string("(none)")) + " (this reader reads versions 1 and 2)"};
  std::vector<std::pair<std::string, Num>> got;
  for (size_t i = 2; i < toks.size(); i++) {
    const std::string &t = toks[i];
    size_t eq = t.find('=');
    std::string k = eq == std::string::npos ? t : t.substr(0, eq);
    bool known = false;
    for (const char *f : HEADER_FIELDS) known |= k == f;
    if (eq == std::string::npos || !known)
      throw Fail{"bad header field " + repr(t) +
                 " (expected N=, VMEM_TILES=, PSUM_TILES=, optional IMEM_WORDS=, HBM_TILES=, HBM_LATENCY=, HBM_BW_NUM=, HBM_BW_DEN=)"};
    for (auto &g : got) if (g.first == k) throw Fail{"header field " + k + " given twice"};
    got.push_back({k, parse_int(t.substr(eq + 1))});
  }
  for (const char *k : {"N", "VMEM_TILES", "PSUM_TILES"}) {
    bool has = false;
    for (auto &g : got) has |= g.first == k;
    if (!has) throw Fail{std::string("header is missing ") + k + "="};
  }
  for (int i = 0; i < 8; i++) {  // the fields given must match the model; one left out takes the model's value
    long long model = field_value(cfg, i);
    for (auto &g : got) {
      if (g.first != HEADER_FIELDS[i]) continue;
      if (g.second.big || g.second.v != model)
        throw Fail{"config mismatch: bundle has " + g.first + "=" + g.second.dec + ", the model has " + g.first + "=" + std::to_string(model)};
    }
  }
  return toks[1] == "2" ? 2 : 1;
}

std::string errno_text(int e) { return strerror(e); }  // Python's os.strerror

// records.read_side: nbytes bytes of a side file from offset as uint32 lanes (raw little endian),
// mapped, not copied (a big-endian host copies and swaps)
void read_side(const std::string &path, long long offset, long long nbytes, const std::string &what, Lanes &out) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) throw Fail{what + " " + repr(path) + ": " + errno_text(errno)};
  long long size = (long long)st.st_size;
  if (offset + nbytes > size)
    throw Fail{"needs bytes " + std::to_string(offset) + ".." + std::to_string(offset + nbytes - 1) + " of " + what + " " + repr(path) +
               ", which has " + std::to_string(size) + " bytes (truncated side file?)"};
  auto fail = [&] { return Fail{"short read of " + what + " " + repr(path) + " at byte " + std::to_string(offset)}; };
  int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) throw Fail{what + " " + repr(path) + ": " + errno_text(errno)};
  long long page = sysconf(_SC_PAGESIZE), base = offset / page * page;
  size_t len = (size_t)(offset - base + nbytes);
  void *m = mmap(nullptr, len, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, (off_t)base);
  close(fd);
  if (m == MAP_FAILED) throw fail();
  out.map = std::shared_ptr<void>(m, [len](void *p) { munmap(p, len); });
  out.view = reinterpret_cast<const uint32_t *>(static_cast<const char *>(m) + (offset - base));
  out.n = (size_t)(nbytes / 4);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  out.own.assign(out.view, out.view + out.n);
  for (auto &v : out.own) v = __builtin_bswap32(v);
  out.view = nullptr, out.map.reset();
#endif
}

// ---------------------------------------------------------------------------------------------
// one bundle record, as the assembler's directive `.rec rest`
struct Assembler {
  const SimConfig &cfg;
  Bundle &b;
  std::map<std::pair<std::string, long long>, int> seen;
  std::vector<int> region_line;  // the line of each HBM region's first record
  bool hbm_continues = false;    // the last HBM record was an `hbm` of tile hbm_next - 1
  long long hbm_next = 0;
  std::string binfile;
  int binfile_line = 0, result_line = 0;

  Assembler(const SimConfig &c, Bundle &out) : cfg(c), b(out) {}

  long long space(const std::string &kind) { return kind == "vmem" ? cfg.VMEM_TILES : kind == "psum" ? cfg.PSUM_TILES : cfg.HBM_TILES; }

  void line(int ln, const std::string &raw) {
    std::string s = strip(cut_comment(raw, "#;"));
    if (s.empty()) return;
    auto sp = s.find(' ');
    std::string d = lower(sp == std::string::npos ? s : s.substr(0, sp));
    std::string rest = sp == std::string::npos ? "" : s.substr(sp + 1);
    auto toks = split_ws(rest);
    int lanes = cfg.N * cfg.N;
    if (d == ".vmem" || d == ".psum" || d == ".hbm") {
      std::string kind = d.substr(1);
      if (toks.empty()) throw Fail{kind + " needs an address and " + std::to_string(lanes) + " values"};
      Num addr = parse_int(toks[0]);
      auto vals = values(strip(rest).substr(toks[0].size()));
      if (!addr.in(0, space(kind) - 1))
        throw Fail{kind + " address " + addr.dec + " out of range [0, " + std::to_string(space(kind)) + ")"};
      if ((int)vals.size() != lanes)
        throw Fail{kind + " " + addr.dec + ": expected " + std::to_string(lanes) + " values (N*N, N=" + std::to_string(cfg.N) + "), got " + std::to_string(vals.size())};
      Tile t{(int)addr.v, {}};
      for (auto &v : vals) t.lanes.push_back(check_value(v));
      auto key = std::make_pair(d, (long long)addr.v);
      if (seen.count(key)) throw Fail{kind + " " + addr.dec + " already preloaded on line " + std::to_string(seen[key])};
      seen[key] = ln;
      if (kind == "hbm") {  // continues the region of the HBM record before it when that was an `hbm` of the tile before
        if (hbm_continues && hbm_next == t.addr) {
          b.hbm.back().count++;
          b.hbm.back().lanes.own.insert(b.hbm.back().lanes.own.end(), t.lanes.begin(), t.lanes.end());
        } else {
          b.hbm.push_back({t.addr, 1, {}});
          b.hbm.back().lanes.own = t.lanes;
          region_line.push_back(ln);
        }
        hbm_continues = true, hbm_next = t.addr + 1;
      } else {
        (kind == "vmem" ? b.vmem : b.psum).push_back(t);
      }
    } else if (d == ".binfile") {
      if (toks.size() != 1) throw Fail{"binfile takes one path (no spaces, `#` or `;`), got " + std::to_string(toks.size()) + " values"};
      if (binfile_line) throw Fail{"duplicate `binfile` (first on line " + std::to_string(binfile_line) + ")"};
      struct stat st;
      if (stat(toks[0].c_str(), &st) != 0) throw Fail{"binfile " + repr(toks[0]) + ": " + errno_text(errno)};
      if (!S_ISREG(st.st_mode)) throw Fail{"binfile " + repr(toks[0]) + " is not a regular file"};
      binfile = toks[0], binfile_line = ln;
    } else if (d == ".hbmbin") {
      if (toks.size() != 3)
        throw Fail{"hbmbin takes an address, a tile count and a byte offset, got " + std::to_string(toks.size()) + " values"};
      Num addr = parse_int(toks[0]), count = parse_int(toks[1]), off = parse_int(toks[2]);
      if (!binfile_line) throw Fail{"hbmbin needs a `binfile` record before it"};
      if (!addr.in(0, cfg.HBM_TILES - 1)) throw Fail{"hbmbin address " + addr.dec + " out of range [0, " + std::to_string(cfg.HBM_TILES) + ")"};
      if (!count.in(1, cfg.HBM_TILES)) throw Fail{"hbmbin count " + count.dec + " out of range [1, " + std::to_string(cfg.HBM_TILES) + "]"};
      if (!off.in(0, (1LL << 62) - 1) || off.v % 4) throw Fail{"hbmbin offset " + off.dec + " must be a multiple of 4 in [0, 2^62)"};
      HbmRegion r{(long long)addr.v, (long long)count.v, {}};
      try {
        read_side(binfile, (long long)off.v, r.count * lanes * 4, "binfile", r.lanes);
      } catch (Fail &e) {
        throw Fail{"hbmbin " + addr.dec + " " + count.dec + ": " + e.why};
      }
      b.hbm.push_back(std::move(r));
      region_line.push_back(ln);
      hbm_continues = false;
    } else if (d == ".resultfile") {
      if (toks.size() != 1) throw Fail{"resultfile takes one path (no spaces, `#` or `;`), got " + std::to_string(toks.size()) + " values"};
      if (result_line) throw Fail{"duplicate `resultfile` (first on line " + std::to_string(result_line) + ")"};
      b.resultfile = toks[0], result_line = ln;
    } else if (d == ".sreg") {
      auto vals = values(rest);
      if (vals.size() != 2) throw Fail{"sreg takes a register number and a value, got " + std::to_string(vals.size()) + " values"};
      if (!vals[0].in(0, 15)) throw Fail{"scalar register " + vals[0].dec + " out of range [0, 16)"};
      uint32_t v = check_value(vals[1]);
      if (vals[0].v == 0 && v != 0) throw Fail{"s0 is hardwired to 0 and cannot be preloaded"};
      auto key = std::make_pair(d, (long long)vals[0].v);
      if (seen.count(key)) throw Fail{"sreg " + vals[0].dec + " already preloaded on line " + std::to_string(seen[key])};
      seen[key] = ln;
      b.sregs.push_back({(int)vals[0].v, v});
    } else if (d == ".dump") {
      if (toks.empty()) throw Fail{"dump needs vmem, psum, hbm or sreg"};
      std::string kind = lower(toks[0]);
      std::vector<Num> args;
      for (size_t i = 1; i < toks.size(); i++) args.push_back(parse_int(toks[i]));
      if (kind == "sreg") {
        if (!args.empty()) throw Fail{"`dump sreg` takes no arguments (it dumps all 16 registers)"};
        b.dumps.push_back({"sreg", 0, 16});
        return;
      }
      if (kind != "vmem" && kind != "psum" && kind != "hbm") throw Fail{"cannot dump " + repr(kind) + " (expected vmem, psum, hbm or sreg)"};
      if (args.size() != 2)
        throw Fail{"`dump " + kind + "` takes an address and a tile count, got " + std::to_string(args.size()) + " values"};
      Num &a = args[0], &c = args[1];
      if (c.lt(1)) throw Fail{"dump " + kind + " count " + c.dec + " must be >= 1"};
      long long size = space(kind);
      if (!a.in(0, size - 1) || c.gt(size) || a.v + c.v > size)
        throw Fail{"dump " + kind + " " + a.dec + ".." + ((a.big || c.big) ? std::string("?") : i128str(a.v + c.v - 1)) +
                   " out of range [0, " + std::to_string(size) + ")"};
      b.dumps.push_back({kind, (long long)a.v, (long long)c.v});
    } else if (d == ".run") {
      if (toks.size() != 1) throw Fail{"run takes one watchdog limit in cycles, got " + std::to_string(toks.size()) + " values"};
      Num lim = parse_int(toks[0]);
      if (!lim.in(1, INT64_MAX)) throw Fail{"run limit " + lim.dec + " out of range [1, 2^63-1]"};
      b.max_cycles = (long long)lim.v;
    } else if (d == ".word") {
      if (toks.size() != 1) throw Fail{"an instruction word is one value, got " + std::to_string(toks.size())};
      Num w = parse_int(toks[0]);
      if (w.big || w.v < 0 || (w.v >> 64)) throw Fail{"instruction word " + toks[0] + " is not a 64-bit value"};
      b.program.push_back((uint64_t)w.v);  // an illegal word is content: the core traps if it runs
    } else {
      throw Fail{"unknown directive " + repr(d) + " (expected .vmem, .psum, .hbm, .sreg, .dump, .run, .word, .binfile, .hbmbin or .resultfile)"};
    }
    if ((long long)b.program.size() > cfg.IMEM_WORDS) throw Fail{"program longer than IMEM_WORDS=" + std::to_string(cfg.IMEM_WORDS)};
  }

  // records.hbm_regions_problem: capacity region by region, then overlaps in address order; throws
  // BundleError at the line of the region named
  void check_regions() {
    auto tiles = [](long long a, long long e) { return "(tiles " + std::to_string(a) + ".." + std::to_string(e - 1) + ")"; };
    std::vector<std::tuple<long long, long long, size_t>> spans;
    for (size_t k = 0; k < b.hbm.size(); k++) {
      const HbmRegion &r = b.hbm[k];
      if (r.addr < 0 || r.addr + r.count > cfg.HBM_TILES)
        throw BundleError{region_line[k], "hbm region " + std::to_string(k) + " " + tiles(r.addr, r.addr + r.count) +
                                              ": outside the HBM capacity [0, " + std::to_string(cfg.HBM_TILES) + ") (HBM_TILES)"};
      spans.emplace_back(r.addr, r.addr + r.count, k);
    }
    std::sort(spans.begin(), spans.end());
    for (size_t i = 1; i < spans.size(); i++) {
      auto [a0, e0, k0] = spans[i - 1];
      auto [a1, e1, k1] = spans[i];
      if (a1 < e0)
        throw BundleError{region_line[k1], "hbm region " + std::to_string(k1) + " " + tiles(a1, e1) + " overlaps hbm region " +
                                               std::to_string(k0) + " " + tiles(a0, e0)};
    }
  }
};

}  // namespace

Bundle parse_bundle(const std::string &text, const SimConfig &cfg) {
  static const std::vector<std::string> RECORDS = {"vmem", "psum", "hbm", "sreg", "inst", "asm", "dump", "run"};
  static const std::vector<std::string> RECORDS_V2 = {"vmem", "psum", "hbm", "sreg", "inst", "asm", "dump", "run", "binfile", "hbmbin", "resultfile"};
  auto known = [](const std::vector<std::string> &v, const std::string &r) { return std::find(v.begin(), v.end(), r) != v.end(); };
  auto joined = [](const std::vector<std::string> &v) {
    std::string s;
    for (auto &r : v) s += (s.empty() ? "" : ", ") + r;
    return s;
  };
  auto lines = splitlines(text);
  bool have_cfg = false;
  int run_line = 0, version = 1;
  std::vector<std::pair<int, std::string>> body;
  for (size_t i = 0; i < lines.size(); i++) {
    int ln = (int)i + 1;
    std::string s = strip(cut_comment(lines[i], "#"));
    if (s.empty()) continue;
    try {
      if (!have_cfg) {
        version = parse_header(s, cfg);
        have_cfg = true;
        continue;
      }
      auto parts = split_ws(s, 1);
      std::string rec = parts[0], rest = parts.size() > 1 ? parts[1] : "";
      if (rec == "run" && run_line) throw Fail{"duplicate `run` (first on line " + std::to_string(run_line) + ")"};
      if (run_line) throw Fail{"record `" + rec + "` after `run` (line " + std::to_string(run_line) + "): `run` must be the last record"};
      if (version == 1 && known(RECORDS_V2, rec) && !known(RECORDS, rec))
        throw Fail{"record `" + rec + "` needs a version 2 bundle (header `tinytpu-bundle 2 ...`)"};
      const auto &records = version == 1 ? RECORDS : RECORDS_V2;
      if (!known(records, rec)) throw Fail{"unknown record " + repr(rec) + " (expected one of " + joined(records) + ")"};
      if (rec == "asm") {
        if (!strip(rest).empty() && strip(rest)[0] == '.') throw Fail{"an `asm` record holds an instruction or label, not a directive"};
        throw Fail{"`asm` records need the Python assembler: run this bundle through tinytpu.cosim"};
      } else if (rec == "inst") {
        body.push_back({ln, ".word " + rest});
      } else {
        if (rec == "run") run_line = ln;
        body.push_back({ln, "." + rec + " " + rest});
      }
    } catch (Fail &e) {
      throw BundleError{ln, e.why};
    }
  }
  int after = (int)lines.size() + 1;
  if (!have_cfg) throw BundleError{after, "missing header `" + header_text(cfg) + "`"};
  if (!run_line) throw BundleError{after, "missing `run <watchdog cycles>` record"};
  Bundle b;
  b.version = version;
  Assembler as(cfg, b);
  for (auto &[ln, raw] : body) {
    try {
      as.line(ln, raw);
    } catch (Fail &e) {
      throw BundleError{ln, e.why};
    }
  }
  as.check_regions();
  return b;
}

void write_hbm_dump(std::ostream &o, const Bundle &b, const Dump &d, const std::vector<uint32_t> &lanes, const SimConfig &cfg) {
  const size_t L = (size_t)cfg.N * cfg.N;
  if (b.version == 2 && !b.resultfile.empty()) {
    // the lanes go to the result file, after those of the hbm dumps before this one (in dump order)
    size_t k = 0;
    while (k < b.dumps.size() && &b.dumps[k] != &d) k++;
    for (size_t i = 0; k == b.dumps.size() && i < b.dumps.size(); i++)  // d is a copy: the first equal dump
      if (b.dumps[i].kind == d.kind && b.dumps[i].addr == d.addr && b.dumps[i].count == d.count) k = i;
    long long off = 0;
    for (size_t i = 0; i < k && i < b.dumps.size(); i++)
      if (b.dumps[i].kind == "hbm") off += b.dumps[i].count * (long long)L * 4;
    FILE *f = fopen(b.resultfile.c_str(), off == 0 ? "wb" : "r+b");
    size_t n = (size_t)d.count * L;
    bool sane = k < b.dumps.size() && lanes.size() >= n;
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    std::vector<uint32_t> le(lanes.begin(), lanes.begin() + std::min(n, lanes.size()));
    for (auto &v : le) v = __builtin_bswap32(v);
    const uint32_t *src = le.data();
#else
    const uint32_t *src = lanes.data();
#endif
    bool ok = f && sane && fseeko(f, (off_t)off, SEEK_SET) == 0 && fwrite(src, 4, n, f) == n;
    int err = errno;
    if (f) ok = fclose(f) == 0 && ok;
    if (!ok) {  // no partial result: the run fails (exit 3)
      fprintf(stderr, "tinytpu-sim: cannot write dump hbm %lld %lld to result file %s: %s\n", d.addr, d.count, b.resultfile.c_str(),
              sane ? strerror(err) : "not a dump of this bundle");
      std::exit(3);
    }
    o << "hbm " << d.addr << ' ' << d.count << " @" << off << '\n';
    return;
  }
  o << "hbm " << d.addr << ' ' << d.count;
  for (size_t l = 0; l < (size_t)d.count * L; l++) o << ' ' << (int32_t)lanes[l];
  o << '\n';
}
