// FEXP2 datapath (doc/transcendental.md "FEXP2"): 2^x = 2^i * 2^f with x = i + f in Q32 fixed
// point (truncated toward zero), f in [0, 1), and 2^f from a Q30 Horner polynomial (EXP2_C).
// Gives the unrounded magnitude p_o * 2^x_o for fp32_trans to round, or, when special_o, the final
// result special_res_o (NaN; |x| >= 256 and ±inf: +inf or +0). Combinational (latency 0).
module fp32_exp2
  import tinytpu_pkg::*;
(
  input  logic               [31:0] a_i,
  output logic                      special_o,
  output logic               [31:0] special_res_o,
  output logic               [61:0] p_o,
  output logic signed        [11:0] x_o
);

  // one shared simulation model for every instance (many instances, much faster Verilator builds)
  /* verilator no_inline_module */

  logic       s;
  logic [7:0] e;
  logic [22:0] m;
  assign {s, e, m} = a_i;

  // |x| * 2^32 = M * 2^sh with sh = max(e, 1) - 118; on the main path (e <= 134) sh <= 16
  logic [23:0] mant;
  logic signed [9:0] sh;
  logic [39:0] mag;
  assign mant = {e != '0, m};
  assign sh   = 10'(signed'({2'b0, (e == '0) ? 8'd1 : e})) - 10'sd118;
  always_comb begin
    if (sh >= 0) mag = 40'(mant) << ((sh > 10'sd16) ? 10'd16 : 10'(sh));
    else mag = 40'(mant) >> 10'(-sh);  // -sh <= 117: shifts of 40 and more give 0
  end

  // x in Q32 (41 bits signed), split into the integer floor i and the fraction f
  logic signed [40:0] xq;
  logic signed [8:0] i;
  logic [31:0] f;
  assign xq = s ? -signed'({1'b0, mag}) : signed'({1'b0, mag});
  assign i  = xq[40:32];
  assign f  = xq[31:0];

  // Horner in Q30: h = EXP2_C[k] + (h * f) >> 32; every coefficient is positive, h < 2^31
  logic [31:0] h;
  always_comb begin
    h = EXP2_C[6];
    for (int k = 5; k >= 0; k--) h = EXP2_C[k] + 32'((64'(h) * 64'(f)) >> 32);
  end

  assign p_o = 62'(h);
  assign x_o = 12'(i) - 12'sd30;

  always_comb begin
    special_o     = 1'b1;
    special_res_o = '0;
    if (e == 8'hff && m != '0) special_res_o = 32'h7fc0_0000;
    else if (e >= 8'd135) special_res_o = s ? 32'h0000_0000 : 32'h7f80_0000;
    else special_o = 1'b0;
  end

endmodule
