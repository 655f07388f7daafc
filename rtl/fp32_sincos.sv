// FSIN / FCOS datapath (doc/transcendental.md "FSIN and FCOS"). Range reduction: |x| * 2/pi mod 4
// in Q62 from the 24-bit significand times a 96-bit window of 2/pi (TWO_OVER_PI) picked by the
// exponent (three 24 x 32 products); cos adds a quarter turn. The nearest quadrant q and the
// remainder t in [-1/2, 1/2) select sin(pi/2 t) (t times a Q30 polynomial in t^2, SIN_C) or
// cos(pi/2 t) (COS_C), with the sign from q (and, for sin, from x). Gives the magnitude
// p_o * 2^x_o and sign neg_o for fp32_trans to round, or, when special_o, the final result
// special_res_o (NaN for NaN and ±inf; for |x| < 2^-12 sin x = x and cos x = 1.0).
// Combinational (latency 0).
module fp32_sincos
  import tinytpu_pkg::*;
(
  input  logic               cos_i,
  input  logic        [31:0] a_i,
  output logic               special_o,
  output logic        [31:0] special_res_o,
  output logic               neg_o,
  output logic        [61:0] p_o,
  output logic signed [11:0] x_o
);

  // one shared simulation model for every instance (many instances, much faster Verilator builds)
  /* verilator no_inline_module */

  localparam logic [7:0] MIN_EXP = 8'd115;  // below: |x| < 2^-12

  logic       s;
  logic [7:0] e;
  logic [22:0] m;
  assign {s, e, m} = a_i;

  // the 96-bit window of 2/pi for this exponent (clamped on the special path, which ignores it)
  logic [7:0] ec;
  logic [31:0] w0, w1, w2;
  assign ec = (e < MIN_EXP || e == 8'hff) ? MIN_EXP : e;
  assign {w2, w1, w0} = 96'(TWO_OVER_PI >> (9'd280 - 9'(ec)));

  // y = (M * W) >> 32 mod 2^64: |x| * 2/pi mod 4 in Q62; cos x = sin(x + pi/2)
  logic [23:0] mant, p0_hi;
  logic [55:0] p1;
  logic [31:0] p2_lo;
  logic [63:0] y, yr;
  assign mant  = {1'b1, m};
  assign p0_hi = 24'((56'(mant) * 56'(w0)) >> 32);
  assign p1    = 56'(mant) * 56'(w1);
  assign p2_lo = 32'(56'(mant) * 56'(w2));
  assign y     = {p2_lo, 32'd0} + 64'(p1) + 64'(p0_hi) + (cos_i ? 64'd1 << 62 : 64'd0);

  // nearest quadrant q and t = y - q in [-1/2, 1/2) (Q62), a = |t| <= 2^61
  logic [1:0] q;
  logic signed [62:0] t;
  logic [61:0] a;
  assign yr = y + (64'd1 << 61);
  assign q  = yr[63:62];
  assign t  = signed'({1'b0, yr[61:0]}) - (63'sd1 <<< 61);
  assign a  = 62'(t < 0 ? -t : t);

  // u = t^2 in Q32
  logic [31:0] a32, u;
  assign a32 = a[61:30];
  assign u   = 32'((64'(a32) * 64'(a32)) >> 32);

  // signed Horner in Q30 over u for the sine (hs ~ sin(pi/2 t) / t) and cosine polynomials
  logic signed [31:0] hs, hc;
  logic signed [63:0] us, ps, pc;
  always_comb begin
    us = signed'({32'd0, u});
    hs = signed'(SIN_C[4]);
    hc = signed'(COS_C[4]);
    ps = '0;
    pc = '0;
    for (int k = 3; k >= 0; k--) begin
      ps = 64'(hs) * us;
      pc = 64'(hc) * us;
      hs = signed'(SIN_C[k]) + 32'(ps >>> 32);
      hc = signed'(COS_C[k]) + 32'(pc >>> 32);
    end
  end

  // normalise a: a31 is its top 31 bits (leading one at bit 30), la = bitlen(a)
  logic [5:0] la;
  logic [30:0] a31;
  always_comb begin
    la = '0;
    for (int k = 0; k < 62; k++) begin
      if (a[k]) la = 6'(k + 1);
    end
  end
  assign a31 = 31'((a << (6'd62 - la)) >> 31);

  // quadrant select: q even: ±sin r, q odd: ±cos r
  logic t_neg;
  assign t_neg = t < 0;
  always_comb begin
    if (q[0]) begin
      p_o   = 62'(hc);
      x_o   = -12'sd30;
      neg_o = q[1];
    end else begin
      p_o   = 62'(a31) * 62'(hs);
      x_o   = 12'(la) - 12'sd123;
      neg_o = t_neg ^ q[1];
    end
    if (!cos_i) neg_o = neg_o ^ s;
  end

  always_comb begin
    special_o     = 1'b1;
    special_res_o = '0;
    if (e == 8'hff) special_res_o = 32'h7fc0_0000;
    else if (e < MIN_EXP) special_res_o = cos_i ? 32'h3f80_0000 : a_i;
    else special_o = 1'b0;
  end

endmodule
