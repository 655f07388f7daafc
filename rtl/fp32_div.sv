// IEEE-754 binary32 division a / b, round to nearest even, subnormals in and out (FRECIP is
// 1.0 / b). x/0 = ±inf, 0/0, inf/inf and NaN operands give the canonical NaN 0x7FC00000.
// Significands are normalised, then a restoring digit recurrence produces 27 quotient bits
// (24 + guard + one spare) and the final remainder is the sticky bit.
// Combinational (latency 0): the VPU pipeline around it gives FDIV/FRECIP their 6 cycles.
module fp32_div (
  input  logic [31:0] a_i,
  input  logic [31:0] b_i,
  output logic [31:0] result_o
);

  // one shared simulation model for every instance (many instances, much faster Verilator builds)
  /* verilator no_inline_module */

  localparam logic [31:0] QNAN = 32'h7fc0_0000;

  logic sign, a_nan, b_nan, a_inf, b_inf, a_zero, b_zero;
  assign sign   = a_i[31] ^ b_i[31];
  assign a_nan  = (a_i[30:23] == 8'hff) && (a_i[22:0] != '0);
  assign b_nan  = (b_i[30:23] == 8'hff) && (b_i[22:0] != '0);
  assign a_inf  = (a_i[30:23] == 8'hff) && (a_i[22:0] == '0);
  assign b_inf  = (b_i[30:23] == 8'hff) && (b_i[22:0] == '0);
  assign a_zero = a_i[30:0] == '0;
  assign b_zero = b_i[30:0] == '0;

  // normalised significands (leading one at bit 23) and their exponents, which a subnormal
  // operand pushes below 1
  logic [23:0] ma, mb;
  logic signed [11:0] ea, eb;
  always_comb begin
    ma = {a_i[30:23] != '0, a_i[22:0]};
    mb = {b_i[30:23] != '0, b_i[22:0]};
    ea = (a_i[30:23] == '0) ? 12'sd1 : 12'(a_i[30:23]);
    eb = (b_i[30:23] == '0) ? 12'sd1 : 12'(b_i[30:23]);
    for (int i = 0; i < 23; i++) begin
      if (!ma[23] && ma != '0) begin ma = ma << 1; ea = ea - 12'sd1; end
      if (!mb[23] && mb != '0) begin mb = mb << 1; eb = eb - 12'sd1; end
    end
  end

  // restoring division: q = floor(ma * 2^26 / mb), ma / mb in (1/2, 2) so q has 26 or 27 bits
  logic [26:0] q;
  logic [25:0] rem;
  always_comb begin
    q   = '0;
    rem = {2'b0, ma};
    for (int i = 26; i >= 0; i--) begin
      if (rem >= {2'b0, mb}) begin
        q[i] = 1'b1;
        rem  = rem - {2'b0, mb};
      end
      rem = rem << 1;
    end
  end

  // a / b = q * 2^-26 * 2^(ea - eb) = q * 2^(exp - 127 - 26)  =>  exp = ea - eb + 127
  logic [31:0] rounded;
  fp32_round #(.W(27)) u_round (
    .sign_i  (sign),
    .exp_i   (ea - eb + 12'sd127),
    .sig_i   (q),
    .sticky_i(rem != '0),
    .result_o(rounded)
  );

  always_comb begin
    if (a_nan || b_nan || (a_inf && b_inf) || (a_zero && b_zero)) result_o = QNAN;
    else if (a_inf || b_zero) result_o = {sign, 8'hff, 23'd0};
    else if (a_zero || b_inf) result_o = {sign, 31'd0};
    else result_o = rounded;
  end

endmodule
