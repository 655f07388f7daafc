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

  always_comb begin
    unique case (fn_i)
      VPU_FEXP2: result_o = fp32_pkg::trans_round(fp32_pkg::exp2(a_i));
      VPU_FLOG2: result_o = fp32_pkg::trans_round(fp32_pkg::log2(a_i));
      default:   result_o = fp32_pkg::trans_round(fp32_pkg::sincos(fn_i == VPU_FCOS, a_i));
    endcase
  end

endmodule
