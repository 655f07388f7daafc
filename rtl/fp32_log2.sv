// FLOG2 datapath (doc/transcendental.md "FLOG2"): x = M * 2^E with M in [1, 2) (subnormals
// normalised), M's top 5 fraction bits j pick a reciprocal r_j (LOG2_RECIP) so that
// z = M * r_j - 1 is in [0, 1/32), and log2 x = E + LOG2_TAB[j] + log2(1 + z), the last from a
// signed Q30 Horner polynomial (LOG2_C). Gives the signed Q40 result as neg_o and the magnitude
// p_o * 2^-40 for fp32_trans to round, or, when special_o, the final result special_res_o
// (NaN for NaN and negative inputs, -inf for ±0, +inf for +inf). Combinational (latency 0).
module fp32_log2
  import tinytpu_pkg::*;
(
  input  logic        [31:0] a_i,
  output logic               special_o,
  output logic        [31:0] special_res_o,
  output logic               neg_o,
  output logic        [61:0] p_o
);

  // one shared simulation model for every instance (many instances, much faster Verilator builds)
  /* verilator no_inline_module */

  logic       s;
  logic [7:0] e;
  logic [22:0] m;
  assign {s, e, m} = a_i;

  // normalise: M in [2^23, 2^24) (Q23), x = M * 2^(E - 23), E in [-149, 127]
  logic [23:0] mant;
  logic signed [9:0] ex;
  always_comb begin
    mant = {e != '0, m};
    ex   = (e == '0) ? -10'sd126 : 10'(signed'({2'b0, e})) - 10'sd127;
    for (int k = 0; k < 23; k++) begin
      if (!mant[23] && mant != '0) begin
        mant = mant << 1;
        ex   = ex - 10'sd1;
      end
    end
  end

  // z = M * r - 1 in Q37: the Q54 product is >= 2^54 (r is rounded up) and below 2^54 + 2^49
  logic [4:0] j;
  logic [55:0] mr;
  logic [31:0] z;
  assign j  = mant[22:18];
  assign mr = 56'(mant) * 56'(LOG2_RECIP[j]);
  assign z  = 32'((mr - (56'd1 << 54)) >> 17);

  // signed Horner in Q30, then lg = log2(1 + z) in Q40
  logic signed [31:0] h;
  logic signed [63:0] prod, zs;
  always_comb begin
    zs   = signed'({32'd0, z});
    h    = signed'(LOG2_C[3]);
    prod = '0;
    for (int k = 2; k >= 0; k--) begin
      prod = 64'(h) * zs;
      h    = signed'(LOG2_C[k]) + 32'(prod >>> 37);
    end
    prod = 64'(h) * zs;
  end

  // L = E * 2^40 + T + lg, log2 x in Q40, |L| < 2^48
  logic signed [49:0] lsum, labs;
  assign lsum  = (50'(ex) <<< 40) + signed'({10'd0, LOG2_TAB[j]}) + 50'(prod >>> 27);
  assign neg_o = lsum < 0;
  assign labs  = neg_o ? -lsum : lsum;
  assign p_o   = 62'(labs);

  always_comb begin
    special_o     = 1'b1;
    special_res_o = '0;
    if (e == 8'hff && m != '0) special_res_o = 32'h7fc0_0000;
    else if (a_i[30:0] == '0) special_res_o = 32'hff80_0000;
    else if (s) special_res_o = 32'h7fc0_0000;
    else if (e == 8'hff) special_res_o = 32'h7f80_0000;
    else special_o = 1'b0;
  end

endmodule
