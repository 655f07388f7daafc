// vrf: the vector register file, 16 registers of one N x N tile of 32-bit lanes each (lane
// [r][c] at bits (r*N+c)*32 +: 32). Four combinational read ports (a, b, c: the VPU operands;
// s: store data) and two write ports (in the TensorCore: 0 for every producer but VLD, 1 for
// VLD, so a dual-issued load and compute op can land in one cycle). Reads see the registers
// before this cycle's writes (no internal bypass: the TensorCore forwards the write-back data to
// its operands itself). Register numbers are 4-bit instruction fields, so they cannot be out of
// range; the check this file makes is the write conflict: both ports writing one register in a
// cycle is an error (err_o the next cycle) and port 1 (the younger result) wins. Reset clears
// every register.
// Latency: reads 0 cycles, writes visible the next cycle.
module vrf
  import tinytpu_pkg::*;
#(
  parameter int unsigned N = 4
) (
  input  logic              clk_i,
  input  logic              rst_ni,
  input  logic [3:0]        ra_addr_i,
  output logic [N*N*32-1:0] ra_data_o,
  input  logic [3:0]        rb_addr_i,
  output logic [N*N*32-1:0] rb_data_o,
  input  logic [3:0]        rc_addr_i,
  output logic [N*N*32-1:0] rc_data_o,
  input  logic [3:0]        rs_addr_i,
  output logic [N*N*32-1:0] rs_data_o,
  input  logic              we0_i,
  input  logic [3:0]        waddr0_i,
  input  logic [N*N*32-1:0] wdata0_i,
  input  logic              we1_i,
  input  logic [3:0]        waddr1_i,
  input  logic [N*N*32-1:0] wdata1_i,
  output logic              err_o
);
  `include "assert.svh"

  localparam int unsigned REGS = 16;

  `ASSERT_INIT(NPow2, N >= 2 && N <= 16 && (N & (N - 1)) == 0)

  logic [N*N*32-1:0] reg_q [REGS];

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      for (int i = 0; i < int'(REGS); i++) reg_q[i] <= '0;
      err_o <= 1'b0;
    end else begin
      if (we0_i) reg_q[waddr0_i] <= wdata0_i;
      if (we1_i) reg_q[waddr1_i] <= wdata1_i;  // after port 0: wins a conflict
      err_o <= we0_i && we1_i && waddr0_i == waddr1_i;
    end
  end

  // known values after reset: the error flag, the write controls, the register a read selects
  `ASSERT_KNOWN(ErrKnown, err_o)
  `ASSERT_KNOWN(WriteEnablesKnown, {we0_i, we1_i})
  `ASSERT(Write0AddrKnown, we0_i |-> !$isunknown(waddr0_i))
  `ASSERT(Write1AddrKnown, we1_i |-> !$isunknown(waddr1_i))
  `ASSERT_KNOWN(ReadDataKnown, {ra_data_o, rb_data_o, rc_data_o, rs_data_o})

  // the outputs out of reset: the cycle after reset is released every error flag and read data is 0
  // (a wrong reset value would show only in that cycle, before the first edge recomputes it)
  // assertion support: begin
  /*verilator coverage_off*/  // not design logic: no code coverage points
  logic first_q;
  // 0 until a reset: under X-randomised initial values (+verilator+rand+reset+2) a clock edge before the
  // bench first drives reset would otherwise see a random first_q against random outputs
  initial first_q = 1'b0;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) first_q <= 1'b1;
    else         first_q <= 1'b0;
  end
  /*verilator coverage_on*/
  // assertion support: end
  `ASSERT(OutOfResetClean, first_q |-> {err_o} == '0)

  assign ra_data_o = reg_q[ra_addr_i];
  assign rb_data_o = reg_q[rb_addr_i];
  assign rc_data_o = reg_q[rc_addr_i];
  assign rs_data_o = reg_q[rs_addr_i];
endmodule
