// One 32-bit VPU lane: every lane-wise fp32 function of the ISA. Arithmetic is IEEE-754 binary32
// with round to nearest even, subnormals in and out, and NaN results canonicalised to 0x7FC00000
// (FNEG, FABS and BF162F are bit operations and keep NaN payloads). FMAC rounds twice like
// numpy's a*b+c, so it reuses the multiplier and then the adder. Purely combinational
// (latency 0): vpu.sv registers the result and delays it to the documented latency of the
// function (FDIV/FRECIP/FSQRT: 6 cycles, so the digit recurrences may be retimed into those
// stages; FEXP2/FLOG2/FSIN/FCOS: 8 cycles for the multiplier chains of fp32_trans). Functions
// that are not lane-wise fp32 ops give 0.
module vpu_fp_lane
  import tinytpu_pkg::*;
(
  input  vpu_fn_e     fn_i,
  input  logic [31:0] a_i,
  input  logic [31:0] b_i,
  input  logic [31:0] c_i,
  output logic [31:0] result_o
);

  localparam logic [31:0] QNAN = 32'h7fc0_0000;
  localparam logic [31:0] ONE  = 32'h3f80_0000;

  logic a_nan;
  assign a_nan = (a_i[30:23] == 8'hff) && (a_i[22:0] != '0);

  // multiplier, then the adder (FSUB flips b; FMAC adds c to the rounded product)
  logic [31:0] mul_res, add_a, add_b, add_res;
  fp32_mul u_mul (.a_i(a_i), .b_i(b_i), .result_o(mul_res));
  always_comb begin
    add_a = a_i;
    add_b = b_i;
    if (fn_i == VPU_FSUB) add_b = b_i ^ 32'h8000_0000;
    if (fn_i == VPU_FMAC) begin
      add_a = mul_res;
      add_b = c_i;
    end
  end
  fp32_add u_add (.a_i(add_a), .b_i(add_b), .result_o(add_res));

  // divider: FRECIP is 1.0 / a
  logic [31:0] div_res;
  fp32_div u_div (
    .a_i     ((fn_i == VPU_FRECIP) ? ONE : a_i),
    .b_i     ((fn_i == VPU_FRECIP) ? a_i : b_i),
    .result_o(div_res)
  );

  logic [31:0] sqrt_res;
  fp32_sqrt u_sqrt (.a_i(a_i), .result_o(sqrt_res));

  logic lt, eq;
  logic [31:0] max_res, min_res;
  fp32_cmp u_cmp (
    .a_i    (a_i),
    .b_i    (b_i),
    .lt_o   (lt),
    .eq_o   (eq),
    .max_o  (max_res),
    .min_o  (min_res)
  );

  logic [31:0] i2f_res, f2i_res;
  fp32_i2f u_i2f (.signed_i(fn_i == VPU_I2F), .a_i(a_i), .result_o(i2f_res));
  fp32_f2i u_f2i (.a_i(a_i), .result_o(f2i_res));

  // FTRUNC: clear the fraction bits below the binary point; |a| < 1 keeps only the sign,
  // |a| >= 2^23 (and inf) is already integral
  logic [31:0] trunc_res, frac_mask;
  assign frac_mask = (a_i[30:23] >= 8'd150) ? '0 : (32'h007f_ffff >> (a_i[30:23] - 8'd127));
  always_comb begin
    if (a_nan) trunc_res = QNAN;
    else if (a_i[30:23] < 8'd127) trunc_res = {a_i[31], 31'd0};
    else trunc_res = a_i & ~frac_mask;
  end

  // FEXP2, FLOG2, FSIN, FCOS (fixed-point algorithms of doc/transcendental.md)
  logic [31:0] trans_res;
  fp32_trans u_trans (.fn_i(fn_i), .a_i(a_i), .result_o(trans_res));

  // F2BF16: round to nearest even at bit 16; a carry out of the fraction rounds up to inf
  logic [15:0] bf16_res;
  assign bf16_res = 16'((a_i + 32'h0000_7fff + 32'(a_i[16])) >> 16);

  always_comb begin
    unique case (fn_i)
      VPU_FADD, VPU_FSUB, VPU_FMAC: result_o = add_res;
      VPU_FMUL:                     result_o = mul_res;
      VPU_FDIV, VPU_FRECIP:         result_o = div_res;
      VPU_FSQRT:                    result_o = sqrt_res;
      VPU_FNEG:                     result_o = a_i ^ 32'h8000_0000;
      VPU_FABS:                     result_o = a_i & 32'h7fff_ffff;
      VPU_FSIGN: begin
        if (a_nan) result_o = QNAN;
        else if (a_i[30:0] == '0) result_o = a_i;
        else result_o = {a_i[31], ONE[30:0]};
      end
      VPU_FMAX:                     result_o = max_res;
      VPU_FMIN:                     result_o = min_res;
      VPU_FTRUNC:                   result_o = trunc_res;
      VPU_FCMPLT:                   result_o = 32'(lt);
      VPU_FCMPEQ:                   result_o = 32'(eq);
      VPU_FCMPNE:                   result_o = 32'(!eq);
      VPU_I2F, VPU_U2F:             result_o = i2f_res;
      VPU_F2I:                      result_o = f2i_res;
      VPU_F2BF16:                   result_o = a_nan ? 32'h0000_7fc0 : {16'd0, bf16_res};
      VPU_BF162F:                   result_o = {a_i[15:0], 16'd0};
      VPU_FEXP2, VPU_FLOG2, VPU_FSIN, VPU_FCOS: result_o = trans_res;
      default:                      result_o = '0;
    endcase
  end

endmodule
