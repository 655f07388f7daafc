// The fp32 datapath as functions: IEEE-754 binary32 add, multiply, divide, square root, compares,
// int conversions and the transcendental kernels (doc/fp.md, doc/transcendental.md). vpu.sv (every
// lane: `lane`) and vpu_fp_reduce call them inside a case on the function code, so a simulator
// (Verilator) runs only the selected function's logic, and only when an op issues, instead of
// every unit every cycle (doc/performance.md). All combinational. One exit per function: Verilator
// counts a coverage point at the end of its block, so a block left by return never counts.
package fp32_pkg;
  import tinytpu_pkg::*;

  localparam logic [31:0] QNAN = 32'h7fc0_0000;
  localparam logic [31:0] FP_ONE = 32'h3f80_0000;
  localparam int unsigned ADD_G = 26;                  // alignment bits below the smaller significand
  localparam int unsigned ADD_W = 1 + 24 + ADD_G;      // carry bit, significand, alignment bits
  localparam logic [7:0] SINCOS_MIN_EXP = 8'd115;      // below: |x| < 2^-12, sin x = x, cos x = 1

  // a transcendental kernel's outcome: a final special result, or a sign and an unrounded
  // magnitude p * 2^x (p < 2^62)
  typedef struct packed {
    logic               special;
    logic [31:0]        special_res;
    logic               neg;
    logic [61:0]        p;
    logic signed [11:0] x;
  } trans_t;

  function automatic logic is_nan(logic [30:0] v);  // the sign bit does not matter
    return (v[30:23] == 8'hff) && (v[22:0] != '0);
  endfunction

  function automatic logic is_inf(logic [30:0] v);
    return (v[30:23] == 8'hff) && (v[22:0] == '0);
  endfunction

  // Normalise and round (to nearest even) sig * 2^(exp - 127 - 63), plus a nonzero remainder below
  // sig's LSB when sticky is set (fp32_round's contract with the significand left-aligned in 64
  // bits: a narrower one gets zeros below, which changes neither the value nor the rounding).
  // Leading zeros are shifted out; results below the normal range shift into the subnormal
  // format (gradual underflow); overflow gives inf; a zero significand gives a zero of the sign.
  function automatic logic [31:0] round(logic sign, logic signed [11:0] exp, logic [63:0] sig,
                                        logic sticky);
    logic [6:0] lz;
    logic [63:0] norm, lost_mask;
    logic [62:0] den;  // below the hidden bit
    logic signed [12:0] e_norm;
    logic tiny, guard, rest, round_up;
    logic [12:0] den_sh;
    logic [7:0] exp_field;
    logic [22:0] frac;
    logic [30:0] mag;
    logic [31:0] res;
    lz = 7'd64;
    /*verilator unroll_disable*/
    for (int unsigned i = 0; i < 64; i++) begin
      if (sig[i]) lz = 7'(63 - i);
    end
    norm   = sig << lz;
    e_norm = 13'(exp) - 13'(signed'({1'b0, lz}));
    // below the normal range: shift right by 1 - e so the exponent field is 0 (subnormal);
    // shifted-out bits only matter as sticky
    tiny      = e_norm < 13'sd1;
    den_sh    = tiny ? 13'(13'sd1 - e_norm) : '0;
    den       = (den_sh >= 13'd64) ? '0 : 63'(norm >> den_sh);
    lost_mask = (den_sh >= 13'd64) ? '1 : ~({64{1'b1}} << den_sh);
    // keep 24 bits (hidden bit at 63), guard just below, sticky below that
    exp_field = tiny ? 8'd0 : e_norm[7:0];
    frac      = den[62:40];
    guard     = den[39];
    rest      = |den[38:0] | |(norm & lost_mask) | sticky;
    round_up  = guard & (rest | frac[0]);
    // a carry out of the fraction bumps the exponent: subnormal -> normal, max finite -> inf
    mag = {exp_field, frac} + 31'(round_up);
    if (sig == '0) res = {sign, 31'd0};
    else if (!tiny && e_norm >= 13'sd255) res = {sign, 8'hff, 23'd0};
    else res = {sign, mag};
    return res;
  endfunction

  // a + b (subtraction: flip b's sign bit); inf + -inf is NaN; an exact zero sum is +0 unless
  // both operands are -0
  function automatic logic [31:0] add(logic [31:0] a, logic [31:0] b);
    logic [31:0] x, y;
    logic [7:0] ex, ey, d;
    logic [23:0] mx, my;
    logic [ADD_W-1:0] big, y_full, y_al, sum;
    logic lost, sub;
    logic [31:0] res;
    // x is the operand of larger magnitude
    x   = (b[30:0] > a[30:0]) ? b : a;
    y   = (b[30:0] > a[30:0]) ? a : b;
    sub = x[31] ^ y[31];
    if (is_nan(x[30:0]) || is_nan(y[30:0]) || (is_inf(x[30:0]) && is_inf(y[30:0]) && sub)) res = QNAN;
    else if (is_inf(x[30:0])) res = x;  // y is never the only infinity: |y| <= |x|
    else if (x[30:0] == '0 && y[30:0] == '0) res = {x[31] & y[31], 31'd0};
    else begin
      // subnormals have exponent 1 and no hidden bit
      ex = (x[30:23] == '0) ? 8'd1 : x[30:23];
      ey = (y[30:23] == '0) ? 8'd1 : y[30:23];
      mx = {x[30:23] != '0, x[22:0]};
      my = {y[30:23] != '0, y[22:0]};
      d  = ex - ey;
      // align y; bits shifted past the G alignment bits only survive as a sticky remainder
      big    = {1'b0, mx, ADD_G'(0)};
      y_full = {1'b0, my, ADD_G'(0)};
      y_al   = y_full >> d;
      lost   = |(y_full & ~({ADD_W{1'b1}} << d));
      // x - (y_al + frac) = (x - y_al - 1) + (1 - frac): both keep a remainder in (0, 1) ulp
      sum = sub ? big - y_al - ADD_W'(lost) : big + y_al;
      if (sum == '0 && !lost) res = 32'd0;  // exact cancellation is +0 under RNE
      else res = round(x[31], 12'(ex) + 12'sd1, {sum, (64 - ADD_W)'(0)}, lost);
    end
    return res;
  endfunction

  function automatic logic [31:0] mul(logic [31:0] a, logic [31:0] b);
    logic sign, a_zero, b_zero;
    logic [7:0] ea, eb;
    logic [47:0] prod;
    logic [31:0] res;
    sign   = a[31] ^ b[31];
    a_zero = a[30:0] == '0;
    b_zero = b[30:0] == '0;
    if (is_nan(a[30:0]) || is_nan(b[30:0]) || (is_inf(a[30:0]) && b_zero) || (a_zero && is_inf(b[30:0]))) res = QNAN;
    else if (is_inf(a[30:0]) || is_inf(b[30:0])) res = {sign, 8'hff, 23'd0};
    else if (a_zero || b_zero) res = {sign, 31'd0};
    else begin
      ea   = (a[30:23] == '0) ? 8'd1 : a[30:23];
      eb   = (b[30:23] == '0) ? 8'd1 : b[30:23];
      prod = 48'({a[30:23] != '0, a[22:0]}) * 48'({b[30:23] != '0, b[22:0]});
      res  = round(sign, 12'(ea) + 12'(eb) - 12'sd126, {prod, 16'd0}, 1'b0);
    end
    return res;
  endfunction

  // a / b: normalised significands, then a restoring recurrence of 27 quotient bits (24 + guard +
  // one spare); the final remainder is the sticky bit
  function automatic logic [31:0] div(logic [31:0] a, logic [31:0] b);
    logic sign, a_zero, b_zero;
    logic [23:0] ma, mb;
    logic signed [11:0] ea, eb;
    logic [26:0] q;
    logic [25:0] rem;
    logic [31:0] res;
    sign   = a[31] ^ b[31];
    a_zero = a[30:0] == '0;
    b_zero = b[30:0] == '0;
    if (is_nan(a[30:0]) || is_nan(b[30:0]) || (is_inf(a[30:0]) && is_inf(b[30:0])) || (a_zero && b_zero)) res = QNAN;
    else if (is_inf(a[30:0]) || b_zero) res = {sign, 8'hff, 23'd0};
    else if (a_zero || is_inf(b[30:0])) res = {sign, 31'd0};
    else begin
      // a subnormal operand's exponent goes below 1
      ma = {a[30:23] != '0, a[22:0]};
      mb = {b[30:23] != '0, b[22:0]};
      ea = (a[30:23] == '0) ? 12'sd1 : 12'(a[30:23]);
      eb = (b[30:23] == '0) ? 12'sd1 : 12'(b[30:23]);
      /*verilator unroll_disable*/
      for (int i = 0; i < 23; i++) begin
        if (!ma[23]) begin ma = ma << 1; ea = ea - 12'sd1; end
        if (!mb[23]) begin mb = mb << 1; eb = eb - 12'sd1; end
      end
      // q = floor(ma * 2^26 / mb), ma / mb in (1/2, 2) so q has 26 or 27 bits
      q   = '0;
      rem = {2'b0, ma};
      /*verilator unroll_disable*/
      for (int i = 26; i >= 0; i--) begin
        if (rem >= {2'b0, mb}) begin
          q[i] = 1'b1;
          rem  = rem - {2'b0, mb};
        end
        rem = rem << 1;
      end
      // a / b = q * 2^-26 * 2^(ea - eb)  =>  exp = ea - eb + 127
      res = round(sign, ea - eb + 12'sd127, {q, 37'd0}, rem != '0);
    end
    return res;
  endfunction

  // sqrt(a): digit-by-digit recurrence of 27 root bits on the even-exponent significand
  function automatic logic [31:0] sqrt(logic [31:0] a);
    logic [23:0] m;
    logic signed [11:0] e;
    logic [53:0] r;
    logic [26:0] root;
    logic [29:0] rem, trial;
    logic [31:0] res;
    if (is_nan(a[30:0]) || (a[31] && a[30:0] != '0)) res = QNAN;
    else if (a[30:0] == '0 || is_inf(a[30:0])) res = a;
    else begin
      m = {a[30:23] != '0, a[22:0]};
      e = ((a[30:23] == '0) ? 12'sd1 : 12'(a[30:23])) - 12'sd127;
      /*verilator unroll_disable*/
      for (int i = 0; i < 23; i++) begin
        if (!m[23]) begin m = m << 1; e = e - 12'sd1; end
      end
      r    = e[0] ? {m, 30'd0} : {1'b0, m, 29'd0};
      root = '0;
      rem  = '0;
      /*verilator unroll_disable*/
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
      res = round(1'b0, (e >>> 1) + 12'sd127, {root, 37'd0}, rem != '0);
    end
    return res;
  endfunction

  // compares on the total-order key (sign-magnitude to unsigned); -0 == +0; NaN is unordered
  function automatic logic key_lt(logic [31:0] a, logic [31:0] b);
    logic [31:0] ka, kb;
    ka = a[31] ? ~a : {1'b1, a[30:0]};
    kb = b[31] ? ~b : {1'b1, b[30:0]};
    return ka < kb;
  endfunction

  function automatic logic lt(logic [31:0] a, logic [31:0] b);
    return !is_nan(a[30:0]) && !is_nan(b[30:0]) && !(a[30:0] == '0 && b[30:0] == '0) && key_lt(a, b);
  endfunction

  function automatic logic eq(logic [31:0] a, logic [31:0] b);
    return !is_nan(a[30:0]) && !is_nan(b[30:0]) && ((a[30:0] == '0 && b[30:0] == '0) || a == b);
  endfunction

  function automatic logic [31:0] max(logic [31:0] a, logic [31:0] b);
    logic [31:0] res;
    if (is_nan(a[30:0]) || is_nan(b[30:0])) res = QNAN;
    else res = key_lt(a, b) ? b : a;
    return res;
  endfunction

  function automatic logic [31:0] min(logic [31:0] a, logic [31:0] b);
    logic [31:0] res;
    if (is_nan(a[30:0]) || is_nan(b[30:0])) res = QNAN;
    else res = key_lt(a, b) ? a : b;
    return res;
  endfunction

  // int32 (is_signed) or uint32 to fp32, rounded to nearest even
  function automatic logic [31:0] i2f(logic is_signed, logic [31:0] a);
    logic neg;
    neg = is_signed && a[31];
    return round(neg, 12'sd158, {neg ? -a : a, 32'd0}, 1'b0);  // |INT_MIN| = 2^31 fits unsigned
  endfunction

  // fp32 to int32 rounding toward zero, saturating; NaN gives 0
  function automatic logic [31:0] f2i(logic [31:0] a);
    logic [7:0] e;
    logic [31:0] mag, res;
    e = a[30:23];
    if (is_nan(a[30:0]) || e < 8'd127) res = '0;
    else if (e >= 8'd158) res = a[31] ? 32'h8000_0000 : 32'h7fff_ffff;
    else begin
      mag = (e >= 8'd150) ? {9'd1, a[22:0]} << (e - 8'd150) : {9'd1, a[22:0]} >> (8'd150 - e);
      res = a[31] ? -mag : mag;
    end
    return res;
  endfunction

  // one reduction step of the fp trees: 0 sum, 1 max, 2 min, 3 prod
  function automatic logic [31:0] redop(logic [1:0] op, logic [31:0] a, logic [31:0] b);
    logic [31:0] res;
    unique case (op)
      2'd0:    res = add(a, b);
      2'd1:    res = max(a, b);
      2'd2:    res = min(a, b);
      default: res = mul(a, b);
    endcase
    return res;
  endfunction

  // exp2(a) = 2^i * 2^f: i and the 32-bit fraction f from a in fixed point, 2^f by a polynomial
  function automatic trans_t exp2(logic [31:0] a);
    trans_t r;
    logic [7:0] e;
    logic [23:0] mant;
    logic signed [9:0] sh;
    logic [39:0] mag;
    logic signed [40:0] xq;
    logic [31:0] f, h;
    e    = a[30:23];
    mant = {e != '0, a[22:0]};
    sh   = 10'(signed'({2'b0, (e == '0) ? 8'd1 : e})) - 10'sd118;
    if (sh >= 0) mag = 40'(mant) << ((sh > 10'sd16) ? 10'd16 : 10'(sh));
    else mag = 40'(mant) >> 10'(-sh);  // -sh <= 117: shifts of 40 and more give 0
    xq = a[31] ? -signed'({1'b0, mag}) : signed'({1'b0, mag});
    f  = xq[31:0];
    h  = EXP2_C[6];
    for (int k = 5; k >= 0; k--) h = EXP2_C[k] + 32'((64'(h) * 64'(f)) >> 32);
    r.special     = 1'b1;
    r.special_res = '0;
    r.neg         = 1'b0;
    r.p           = 62'(h);
    r.x           = 12'(signed'(xq[40:32])) - 12'sd30;
    if (is_nan(a[30:0])) r.special_res = QNAN;
    else if (e >= 8'd135) r.special_res = a[31] ? 32'h0000_0000 : 32'h7f80_0000;
    else r.special = 1'b0;
    return r;
  endfunction

  // log2(a) = ex + log2(mant): a table point j, a reduced argument z and a polynomial
  function automatic trans_t log2(logic [31:0] a);
    trans_t r;
    logic [7:0] e;
    logic [23:0] mant;
    logic signed [9:0] ex;
    logic [4:0] j;
    logic [55:0] mr;
    logic [31:0] z;
    logic signed [31:0] h;
    logic signed [63:0] prod, zs;
    logic signed [49:0] lsum, labs;
    e    = a[30:23];
    mant = {e != '0, a[22:0]};
    ex   = (e == '0) ? -10'sd126 : 10'(signed'({2'b0, e})) - 10'sd127;
    /*verilator unroll_disable*/
    for (int k = 0; k < 23; k++) begin
      if (!mant[23] && mant != '0) begin
        mant = mant << 1;
        ex   = ex - 10'sd1;
      end
    end
    j  = mant[22:18];
    mr = 56'(mant) * 56'(LOG2_RECIP[j]);
    z  = 32'((mr - (56'd1 << 54)) >> 17);
    zs = signed'({32'd0, z});
    h  = signed'(LOG2_C[3]);
    for (int k = 2; k >= 0; k--) begin
      prod = 64'(h) * zs;
      h    = signed'(LOG2_C[k]) + 32'(prod >>> 37);
    end
    prod = 64'(h) * zs;
    lsum = (50'(ex) <<< 40) + signed'({10'd0, LOG2_TAB[j]}) + 50'(prod >>> 27);
    labs = (lsum < 0) ? -lsum : lsum;
    r.special     = 1'b1;
    r.special_res = '0;
    r.neg         = lsum < 0;
    r.p           = 62'(labs);
    r.x           = -12'sd40;
    if (is_nan(a[30:0])) r.special_res = QNAN;
    else if (a[30:0] == '0) r.special_res = 32'hff80_0000;
    else if (a[31]) r.special_res = QNAN;
    else if (e == 8'hff) r.special_res = 32'h7f80_0000;
    else r.special = 1'b0;
    return r;
  endfunction

  // sin(a) or cos(a) (is_cos): a * 2/pi by a Payne-Hanek window of 2/pi, the quadrant q and the
  // reduced argument t, then the sin or cos polynomial by q
  function automatic trans_t sincos(logic is_cos, logic [31:0] a);
    trans_t r;
    logic [7:0] e, ec;
    logic [31:0] w0, w1, w2, a32, u;
    logic [23:0] mant, p0_hi;
    logic [55:0] p1;
    logic [31:0] p2_lo;
    logic [63:0] y, yr;
    logic [1:0] q;
    logic signed [62:0] t;
    logic [61:0] am;
    logic signed [31:0] hs, hc;
    logic signed [63:0] us, ps, pc;
    logic [5:0] la;
    logic [30:0] a31;
    e  = a[30:23];
    ec = (e < SINCOS_MIN_EXP || e == 8'hff) ? SINCOS_MIN_EXP : e;
    {w2, w1, w0} = 96'(TWO_OVER_PI >> (9'd280 - 9'(ec)));
    mant  = {1'b1, a[22:0]};
    p0_hi = 24'((56'(mant) * 56'(w0)) >> 32);
    p1    = 56'(mant) * 56'(w1);
    p2_lo = 32'(56'(mant) * 56'(w2));
    y     = {p2_lo, 32'd0} + 64'(p1) + 64'(p0_hi) + (is_cos ? 64'd1 << 62 : 64'd0);
    yr    = y + (64'd1 << 61);
    q     = yr[63:62];
    t     = signed'({1'b0, yr[61:0]}) - (63'sd1 <<< 61);
    am    = 62'(t < 0 ? -t : t);
    a32   = am[61:30];
    u     = 32'((64'(a32) * 64'(a32)) >> 32);
    us    = signed'({32'd0, u});
    hs    = signed'(SIN_C[4]);
    hc    = signed'(COS_C[4]);
    for (int k = 3; k >= 0; k--) begin
      ps = 64'(hs) * us;
      pc = 64'(hc) * us;
      hs = signed'(SIN_C[k]) + 32'(ps >>> 32);
      hc = signed'(COS_C[k]) + 32'(pc >>> 32);
    end
    la = '0;
    /*verilator unroll_disable*/
    for (int k = 0; k < 62; k++) begin
      if (am[k]) la = 6'(k + 1);
    end
    a31 = 31'((am << (6'd62 - la)) >> 31);
    if (q[0]) begin
      r.p   = 62'(hc);
      r.x   = -12'sd30;
      r.neg = q[1];
    end else begin
      r.p   = 62'(a31) * 62'(hs);
      r.x   = 12'(la) - 12'sd123;
      r.neg = (t < 0) ^ q[1];
    end
    if (!is_cos) r.neg = r.neg ^ a[31];
    r.special     = 1'b1;
    r.special_res = '0;
    if (e == 8'hff) r.special_res = QNAN;
    else if (e < SINCOS_MIN_EXP) r.special_res = is_cos ? 32'h3f80_0000 : a;
    else r.special = 1'b0;
    return r;
  endfunction

  // the selected kernel's result rounded once: p * 2^x = p * 2^(exp - 127 - 61), exp = x + 188;
  // a zero magnitude is +0
  function automatic logic [31:0] trans_round(trans_t r);
    logic [31:0] res;
    if (r.special) res = r.special_res;
    else res = round(r.neg && r.p != '0, r.x + 12'sd188, {r.p, 2'd0}, 1'b0);
    return res;
  endfunction

  // One VPU lane's fp_lane-class function fn of a, b, c (isa.VPU_CLASS); other functions give 0.
  // Only the selected function is computed (a simulator skips the other branches).
  function automatic logic [31:0] lane(vpu_fn_e fn, logic [31:0] a, logic [31:0] b, logic [31:0] c);
    logic a_nan;
    logic [31:0] frac_mask, add_a, add_b, res;
    a_nan = is_nan(a[30:0]);
    unique case (fn)
      // one adder: FSUB flips b; FMAC adds c to the rounded product
      VPU_FADD, VPU_FSUB, VPU_FMAC: begin
        add_a = a;
        add_b = (fn == VPU_FSUB) ? b ^ 32'h8000_0000 : b;
        if (fn == VPU_FMAC) begin
          add_a = mul(a, b);
          add_b = c;
        end
        res = add(add_a, add_b);
      end
      VPU_FMUL:   res = mul(a, b);
      // one divider: FRECIP is 1.0 / a
      VPU_FDIV, VPU_FRECIP: res = div((fn == VPU_FRECIP) ? FP_ONE : a, (fn == VPU_FRECIP) ? a : b);
      VPU_FSQRT:  res = sqrt(a);
      VPU_FNEG:   res = a ^ 32'h8000_0000;
      VPU_FABS:   res = a & 32'h7fff_ffff;
      VPU_FSIGN: begin
        if (a_nan) res = QNAN;
        else if (a[30:0] == '0) res = a;
        else res = {a[31], FP_ONE[30:0]};
      end
      VPU_FMAX:   res = max(a, b);
      VPU_FMIN:   res = min(a, b);
      // FTRUNC: clear the fraction bits below the binary point; |a| < 1 keeps only the sign,
      // |a| >= 2^23 (and inf) is already integral
      VPU_FTRUNC: begin
        frac_mask = (a[30:23] >= 8'd150) ? '0 : (32'h007f_ffff >> (a[30:23] - 8'd127));
        if (a_nan) res = QNAN;
        else if (a[30:23] < 8'd127) res = {a[31], 31'd0};
        else res = a & ~frac_mask;
      end
      VPU_FCMPLT: res = 32'(lt(a, b));
      VPU_FCMPEQ: res = 32'(eq(a, b));
      VPU_FCMPNE: res = 32'(!eq(a, b));
      VPU_I2F:    res = i2f(1'b1, a);
      VPU_U2F:    res = i2f(1'b0, a);
      VPU_F2I:    res = f2i(a);
      // F2BF16: round to nearest even at bit 16; a carry out of the fraction rounds up to inf
      VPU_F2BF16: res = a_nan ? 32'h0000_7fc0 : {16'd0, 16'((a + 32'h0000_7fff + 32'(a[16])) >> 16)};
      VPU_BF162F: res = {a[15:0], 16'd0};
      // the fixed-point algorithms of doc/transcendental.md
      VPU_FEXP2:  res = trans_round(exp2(a));
      VPU_FLOG2:  res = trans_round(log2(a));
      VPU_FSIN:   res = trans_round(sincos(1'b0, a));
      VPU_FCOS:   res = trans_round(sincos(1'b1, a));
      default:    res = '0;
    endcase
    return res;
  endfunction

endpackage
