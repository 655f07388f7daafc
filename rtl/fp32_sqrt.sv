// IEEE-754 binary32 square root, round to nearest even, subnormal inputs. sqrt(±0) = ±0,
// sqrt(+inf) = +inf, a negative operand or a NaN gives the canonical NaN 0x7FC00000.
// The significand is normalised and widened to a 54-bit radicand with an even exponent, then a
// restoring digit-by-digit recurrence produces a 27-bit root; the remainder is the sticky bit.
// Combinational (latency 0): the VPU pipeline around it gives FSQRT its 6 cycles.
module fp32_sqrt (
  input  logic [31:0] a_i,
  output logic [31:0] result_o
);

  // one shared simulation model for every instance (many instances, much faster Verilator builds)
  /* verilator no_inline_module */

  localparam logic [31:0] QNAN = 32'h7fc0_0000;

  logic a_nan, a_inf, a_zero;
  assign a_nan  = (a_i[30:23] == 8'hff) && (a_i[22:0] != '0);
  assign a_inf  = (a_i[30:23] == 8'hff) && (a_i[22:0] == '0);
  assign a_zero = a_i[30:0] == '0;

  // normalised significand m in [2^23, 2^24) and unbiased exponent: a = m * 2^(e - 23)
  logic [23:0] m;
  logic signed [11:0] e;
  always_comb begin
    m = {a_i[30:23] != '0, a_i[22:0]};
    e = ((a_i[30:23] == '0) ? 12'sd1 : 12'(a_i[30:23])) - 12'sd127;
    for (int i = 0; i < 23; i++) begin
      if (!m[23] && m != '0) begin m = m << 1; e = e - 12'sd1; end
    end
  end

  // radicand r = m * 2^(29 + (e odd)): a = r * 2^(e - 52 - (e odd)), an even power of two,
  // and sqrt(r) lies in [2^26, 2^27)
  logic [53:0] r;
  assign r = e[0] ? {m, 30'd0} : {1'b0, m, 29'd0};

  logic [26:0] root;
  logic [29:0] rem, trial;
  always_comb begin
    root = '0;
    rem  = '0;
    for (int i = 26; i >= 0; i--) begin
      rem   = {rem[27:0], r[2*i+1], r[2*i]};
      trial = {1'b0, root, 2'b01};
      if (rem >= trial) begin
        rem  = rem - trial;
        root = {root[25:0], 1'b1};
      end else begin
        root = {root[25:0], 1'b0};
      end
    end
  end

  // sqrt(a) = root * 2^(floor(e / 2) - 26) = root * 2^(exp - 127 - 26)  =>  exp = floor(e/2) + 127
  logic [31:0] rounded;
  fp32_round #(.W(27)) u_round (
    .sign_i  (1'b0),
    .exp_i   ((e >>> 1) + 12'sd127),
    .sig_i   (root),
    .sticky_i(rem != '0),
    .result_o(rounded)
  );

  always_comb begin
    if (a_nan || (a_i[31] && !a_zero)) result_o = QNAN;
    else if (a_zero || a_inf) result_o = a_i;
    else result_o = rounded;
  end

endmodule
