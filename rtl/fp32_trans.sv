// The transcendental VPU functions of one lane: FEXP2, FLOG2, FSIN, FCOS, each the integer
// algorithm of doc/transcendental.md, bit-exact with golden/transcendental.py. fp32_exp2,
// fp32_log2 and fp32_sincos (shared by FSIN and FCOS) each give either a final special result or
// a sign and an unrounded magnitude P * 2^X (P < 2^62); the selected one is rounded to fp32 once,
// to nearest even with subnormals and overflow to +inf (the doc's ROUND step; P = 0 gives +0).
// Combinational (latency 0): vpu.sv gives these functions their 8 cycles.
module fp32_trans
  import tinytpu_pkg::*;
(
  input  vpu_fn_e     fn_i,
  input  logic [31:0] a_i,
  output logic [31:0] result_o
);

  // one shared simulation model for every instance (many instances, much faster Verilator builds)
  /* verilator no_inline_module */

  logic exp_sp, log_sp, trig_sp, log_neg, trig_neg;
  logic [31:0] exp_res, log_res, trig_res;
  logic [61:0] exp_p, log_p, trig_p;
  logic signed [11:0] exp_x, trig_x;

  fp32_exp2 u_exp2 (
    .a_i          (a_i),
    .special_o    (exp_sp),
    .special_res_o(exp_res),
    .p_o          (exp_p),
    .x_o          (exp_x)
  );

  fp32_log2 u_log2 (
    .a_i          (a_i),
    .special_o    (log_sp),
    .special_res_o(log_res),
    .neg_o        (log_neg),
    .p_o          (log_p)
  );

  fp32_sincos u_sincos (
    .cos_i        (fn_i == VPU_FCOS),
    .a_i          (a_i),
    .special_o    (trig_sp),
    .special_res_o(trig_res),
    .neg_o        (trig_neg),
    .p_o          (trig_p),
    .x_o          (trig_x)
  );

  logic sp, neg;
  logic [31:0] sp_res;
  logic [61:0] p;
  logic signed [11:0] x;
  always_comb begin
    unique case (fn_i)
      VPU_FEXP2: begin sp = exp_sp; sp_res = exp_res; neg = 1'b0; p = exp_p; x = exp_x; end
      VPU_FLOG2: begin sp = log_sp; sp_res = log_res; neg = log_neg; p = log_p; x = -12'sd40; end
      default:   begin sp = trig_sp; sp_res = trig_res; neg = trig_neg; p = trig_p; x = trig_x; end
    endcase
  end

  // p * 2^x = p * 2^(exp - 127 - 61)  =>  exp = x + 188; a zero magnitude is +0
  logic [31:0] rounded;
  fp32_round #(.W(62)) u_round (
    .sign_i  (neg && p != '0),
    .exp_i   (x + 12'sd188),
    .sig_i   (p),
    .sticky_i(1'b0),
    .result_o(rounded)
  );

  assign result_o = sp ? sp_res : rounded;

endmodule
