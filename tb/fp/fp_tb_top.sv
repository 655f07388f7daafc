// fp_tb_top: test wrapper of the fp32 VPU datapath (not part of the TinyTPU core). One request is
// a function and three N x N operand tiles; N*N vpu_fp_lane instances and one vpu_fp_reduce
// compute it, and the tile-wide functions take the vpu_fp_reduce result. A valid/ready request
// port and one output register: latency 1 cycle, one request per cycle while res_ready_i.
// LANES = 0 leaves out the lanes (lane-wise results read 0): vpu_fp_lane does not depend on N, so
// larger N only need the tile-wide functions, and the model builds much faster without N*N lanes.
module fp_tb_top
  import tinytpu_pkg::*;
#(
  parameter int unsigned N     = 4,
  parameter bit          LANES = 1'b1
) (
  input  logic                 clk_i,
  input  logic                 rst_ni,
  input  logic                 req_valid_i,
  output logic                 req_ready_o,
  input  logic [7:0]           fn_i,
  input  logic [N*N-1:0][31:0] a_i,
  input  logic [N*N-1:0][31:0] b_i,
  input  logic [N*N-1:0][31:0] c_i,
  output logic                 res_valid_o,
  input  logic                 res_ready_i,
  output logic [N*N-1:0][31:0] res_o
);

  vpu_fn_e fn;
  assign fn = vpu_fn_e'(fn_i);

  logic [N*N-1:0][31:0] lane_res, tile_res, res_d, res_q;
  if (LANES) begin : g_lanes
    for (genvar i = 0; i < N * N; i++) begin : g_lane
      vpu_fp_lane u_lane (.fn_i(fn), .a_i(a_i[i]), .b_i(b_i[i]), .c_i(c_i[i]), .result_o(lane_res[i]));
    end
  end else begin : g_no_lanes
    logic [N*N-1:0][31:0] unused_c;
    assign unused_c = c_i;
    assign lane_res = '0;
  end
  vpu_fp_reduce #(.N(N)) u_reduce (.fn_i(fn), .a_i(a_i), .b_i(b_i), .result_o(tile_res));

  logic tile_fn;
  assign tile_fn = (fn_i >= 8'(VPU_FSUM_ROW) && fn_i <= 8'(VPU_FPROD_TILE)) || fn == VPU_FROTPAIR
                   || fn == VPU_FARGMAX_ROW || fn == VPU_FARGMIN_ROW;
  assign res_d   = tile_fn ? tile_res : lane_res;

  logic valid_q;
  assign req_ready_o = !valid_q || res_ready_i;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      valid_q <= 1'b0;
      res_q   <= '0;
    end else if (req_valid_i && req_ready_o) begin
      valid_q <= 1'b1;
      res_q   <= res_d;
    end else if (res_ready_i) begin
      valid_q <= 1'b0;
    end
  end

  assign res_valid_o = valid_q;
  assign res_o       = res_q;

endmodule
