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

  assign result_o = fp32_pkg::lane(fn_i, a_i, b_i, c_i);

endmodule
