// Normalise and round (IEEE-754 round to nearest even) an unpacked magnitude into a binary32 word.
// The input value is sig_i * 2^(exp_i - 127 - (W-1)), plus a nonzero remainder below the LSB of
// sig_i when sticky_i is set: exp_i is the biased exponent the result would have if sig_i's MSB
// were its leading one. Leading zeros are shifted out first; results below the normal range are
// shifted right into the subnormal format (gradual underflow) before rounding; overflow gives inf.
// A zero significand gives a zero of sign sign_i. Combinational (latency 0).
module fp32_round #(
  parameter int unsigned W = 32  // significand width; >= 26 so a guard and a sticky bit exist
) (
  input  logic               sign_i,
  input  logic signed [11:0] exp_i,
  input  logic [W-1:0]       sig_i,
  input  logic               sticky_i,
  output logic [31:0]        result_o
);

  // one shared simulation model for every instance (many instances, much faster Verilator builds)
  /* verilator no_inline_module */

  localparam int unsigned LZW = $clog2(W + 1);

  // leading-zero count (W for a zero significand)
  logic [LZW-1:0] lz;
  always_comb begin
    lz = LZW'(W);
    for (int unsigned i = 0; i < W; i++) begin
      if (sig_i[i]) lz = LZW'(W - 1 - i);
    end
  end

  // normalise: the leading one moves to bit W-1; the exponent may go far below 1
  logic [W-1:0] norm;
  logic signed [12:0] e_norm;
  assign norm   = sig_i << lz;
  assign e_norm = 13'(exp_i) - 13'(signed'({1'b0, lz}));

  // below the normal range: shift right by 1 - e so that the exponent field is 0 (subnormal);
  // shifted-out bits only matter as sticky. Shifts >= W leave nothing but the sticky bit.
  logic tiny;
  logic [12:0] den_sh;
  logic [W-1:0] den, lost_mask;
  logic den_sticky;
  assign tiny       = e_norm < 13'sd1;
  assign den_sh     = tiny ? 13'(13'sd1 - e_norm) : '0;
  assign den        = (den_sh >= 13'(W)) ? '0 : norm >> den_sh;
  assign lost_mask  = (den_sh >= 13'(W)) ? '1 : ~({W{1'b1}} << den_sh);
  assign den_sticky = |(norm & lost_mask);

  // round: keep 24 bits (hidden bit at W-1), guard just below, sticky below that
  logic [7:0] exp_field;
  logic [22:0] frac;
  logic guard, rest, round_up, overflow;
  logic [30:0] mag;
  assign exp_field = tiny ? 8'd0 : e_norm[7:0];
  assign frac      = den[W-2 -: 23];
  assign guard     = den[W-25];
  assign rest      = |den[W-26:0] | den_sticky | sticky_i;
  assign round_up  = guard & (rest | frac[0]);
  assign overflow  = !tiny && (e_norm >= 13'sd255);
  // a carry out of the fraction bumps the exponent: subnormal -> normal, max finite -> inf
  assign mag       = {exp_field, frac} + 31'(round_up);

  always_comb begin
    if (sig_i == '0) result_o = {sign_i, 31'd0};
    else if (overflow) result_o = {sign_i, 8'hff, 23'd0};
    else result_o = {sign_i, mag};
  end

endmodule
