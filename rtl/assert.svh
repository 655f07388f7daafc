// TinyTPU assertion macros, after lowRISC's prim_assert (a small subset, defined here). Include
// inside a module (`include "assert.svh"`) and place each assertion next to the logic it guards.
//
//   `ASSERT(Name, prop [, clk [, rst_n]])   concurrent: prop holds at every rising clk edge while
//                                           rst_n is high (default clk_i, rst_ni); prop may be a
//                                           sequence implication (a |-> b, a |=> b)
//   `ASSERT_NEVER(Name, prop [, clk [, rst_n]])   concurrent: prop never holds
//   `ASSERT_KNOWN(Name, sig [, clk [, rst_n]])    concurrent: sig has no X or Z bit after reset
//   `ASSERT_ONEHOT0(Name, sig [, clk [, rst_n]])  concurrent: at most one bit of sig is set
//   `ASSERT_I(Name, expr)                         immediate: expr holds (in an always block)
//   `ASSERT_INIT(Name, expr)                      at time 0: a check on parameters
//
// A failing assertion calls $error with "ASSERT FAILED <Name>: <property>" (the simulator adds the
// path): in a Verilator model built with --assert (every test build is) that stops the
// simulation, and the test fails with the message (tb/kit/runner.py quotes it in the
// AssertionError). A build without --assert ignores them; with TINYTPU_NO_ASSERT defined the macros
// expand to nothing. Verilator simulates two states, so ASSERT_KNOWN only bites on a four-state
// simulator. Every file that includes this one needs -I rtl (the test builds, lint and the co-sim
// pass it).
`ifndef TINYTPU_ASSERT_SVH
`define TINYTPU_ASSERT_SVH

`ifndef TINYTPU_NO_ASSERT

// An edge at time 0 is the simulator's first evaluation, not a clock edge a bench drove: with
// X-randomised initial state (+verilator+rand+reset+2) it can see a random clock rise and a random
// reset high before the bench drives either, and random state; so it is never judged.
`define ASSERT(__name, __prop, __clk = clk_i, __rst_n = rst_ni) \
  __name: assert property (@(posedge __clk) disable iff (!(__rst_n) || $time == 0) (__prop)) \
    else $error("ASSERT FAILED %s: %s", `"__name`", `"__prop`");

`define ASSERT_NEVER(__name, __prop, __clk = clk_i, __rst_n = rst_ni) \
  __name: assert property (@(posedge __clk) disable iff (!(__rst_n) || $time == 0) !(__prop)) \
    else $error("ASSERT FAILED %s: never %s", `"__name`", `"__prop`");

`define ASSERT_KNOWN(__name, __sig, __clk = clk_i, __rst_n = rst_ni) \
  `ASSERT(__name, !$isunknown(__sig), __clk, __rst_n)

`define ASSERT_ONEHOT0(__name, __sig, __clk = clk_i, __rst_n = rst_ni) \
  `ASSERT(__name, $onehot0(__sig), __clk, __rst_n)

`define ASSERT_I(__name, __expr) \
  __name: assert (__expr) else $error("ASSERT FAILED %s: %s", `"__name`", `"__expr`");

`define ASSERT_INIT(__name, __expr) \
  initial begin : __name \
    assert (__expr) else $error("ASSERT FAILED %s: %s", `"__name`", `"__expr`"); \
  end

`else

`define ASSERT(__name, __prop, __clk = clk_i, __rst_n = rst_ni)
`define ASSERT_NEVER(__name, __prop, __clk = clk_i, __rst_n = rst_ni)
`define ASSERT_KNOWN(__name, __sig, __clk = clk_i, __rst_n = rst_ni)
`define ASSERT_ONEHOT0(__name, __sig, __clk = clk_i, __rst_n = rst_ni)
`define ASSERT_I(__name, __expr)
`define ASSERT_INIT(__name, __expr)

`endif

`endif
