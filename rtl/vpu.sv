// Vector unit: one VPU function on whole N x N tiles of 32-bit lanes (lane r*N+c = row r,
// column c), issued at most once per cycle with a valid/ready handshake.
//
// Latency: the result of an op accepted in cycle t is presented on result_o/tag_o with valid_o
// in cycle t + vpu_latency(fn) (1 = the registered result in the next cycle; up to 8 for the
// transcendentals). The datapath computes every function combinationally from the issue-cycle
// operands and places the result in a write-back queue of DEPTH slots (slot 0 is the output
// register; slot k reaches valid_o in k cycles); the registers of a multi-cycle function are
// meant to be retimed into its logic by synthesis. Ops of different latencies overlap freely, so
// independent ops issue while a long op is in flight, and results may complete out of issue
// order (the tag names each). An op with latency L would be written into slot L-1 in the same
// cycle as the op now in slot L moves there, so ready_o is low exactly when slot L is occupied:
// ready_o depends on fn_i and is computed combinationally from it (see doc/vpu.md).
// busy_o is high while an accepted op will still present its result in a later cycle (a
// single-cycle op never raises it).
module vpu
  import tinytpu_pkg::*;
#(
  parameter int unsigned N     = 4,
  parameter int unsigned TAG_W = 4
) (
  input  logic                   clk_i,
  input  logic                   rst_ni,
  input  logic                   valid_i,
  output logic                   ready_o,
  input  vpu_fn_e                fn_i,
  input  logic [N*N-1:0][31:0]   a_i,
  input  logic [N*N-1:0][31:0]   b_i,
  input  logic [N*N-1:0][31:0]   c_i,
  input  logic [TAG_W-1:0]       tag_i,
  output logic                   valid_o,
  output logic [N*N-1:0][31:0]   result_o,
  output logic [TAG_W-1:0]       tag_o,
  output logic                   busy_o
);

  `include "assert.svh"

  localparam int unsigned L = N * N;

  `ASSERT_INIT(NPow2, N >= 2 && N <= 16 && (N & (N - 1)) == 0)
  // fn_i is an 8-bit field: an offered op must name a function of the ISA table
  `ASSERT(FnDefined, valid_i |-> 32'(fn_i) < NUM_VPU_FN)

  // the longest latency of any function: the depth of the write-back queue
  function automatic int unsigned max_latency();
    int unsigned m;
    m = 1;
    for (int i = 0; i < NUM_VPU_FN; i++) begin
      if (int'(vpu_latency(vpu_fn_e'(i))) > m) m = int'(vpu_latency(vpu_fn_e'(i)));
    end
    return m;
  endfunction
  localparam int unsigned DEPTH = max_latency();

  // ---------------------------------------------------------------------------------------------
  // Datapath: four producers, one chosen by the function class

  // the class of a function (generated from the ISA table, isa.VPU_CLASS) picks the producer
  vpu_class_e src;
  assign src = vpu_class(fn_i);

  // the producers compute only the function they are given, so without an issuing op they get a
  // cheap one (VPU_ADD): a simulator then skips the fp and reduction logic (doc/performance.md)
  vpu_fn_e fn_dp;
  assign fn_dp = valid_i ? fn_i : VPU_ADD;

  logic [L-1:0][31:0] int_lane_res, int_tile_res, fp_lane_res, fp_tile_res;

  for (genvar i = 0; i < L; i++) begin : g_lane
    vpu_int_lane u_int_lane (
      .fn_i     (fn_dp),
      .a_i      (a_i[i]),
      .b_i      (b_i[i]),
      .c_i      (c_i[i]),
      .result_o (int_lane_res[i])
    );
  end

  // the fp lanes (fp32_pkg::lane) as a loop that Verilator keeps a loop (unroll_disable):
  // one C++ copy of the fp units instead of one per lane
  always_comb begin
    fp_lane_res = '0;
    if (valid_i && src == VPU_CLASS_FP_LANE) begin
      /*verilator unroll_disable*/
      for (int unsigned i = 0; i < L; i++) fp_lane_res[i] = fp32_pkg::lane(fn_i, a_i[i], b_i[i], c_i[i]);
    end
  end

  vpu_int_reduce #(.N(N)) u_int_reduce (
    .fn_i     (fn_dp),
    .a_i      (a_i),
    .b_i      (b_i),
    .result_o (int_tile_res)
  );

  vpu_fp_reduce #(.N(N)) u_fp_reduce (
    .fn_i     (fn_dp),
    .a_i      (a_i),
    .b_i      (b_i),
    .result_o (fp_tile_res)
  );

  logic [L-1:0][31:0] result;
  always_comb begin
    unique case (src)
      VPU_CLASS_INT_TILE: result = int_tile_res;
      VPU_CLASS_FP_LANE:  result = fp_lane_res;
      VPU_CLASS_FP_TILE:  result = fp_tile_res;
      default:      result = int_lane_res;
    endcase
  end

  // ---------------------------------------------------------------------------------------------
  // Write-back queue: slot k holds the op whose result reaches valid_o in k cycles

  logic [DEPTH-1:0]                  valid_q, valid_d;
  logic [DEPTH-1:0][TAG_W-1:0]       tag_q, tag_d;
  logic [DEPTH-1:0][L-1:0][31:0]     data_q;

  int unsigned lat;
  assign lat = int'(vpu_latency(fn_i));

  // slot lat is the one shifting into the issue slot lat-1 this cycle
  assign ready_o = (lat >= DEPTH) || !valid_q[lat];
  // an issuing op's slot lat-1 is inside the queue and free once the queue has shifted
  `ASSERT(IssueSlotInRange, valid_i |-> lat >= 1 && lat <= DEPTH)
  `ASSERT(IssueSlotFree, valid_i && ready_o |-> lat == DEPTH || !valid_q[lat])

  logic issue;
  assign issue = valid_i && ready_o;

  always_comb begin
    for (int k = 0; k < DEPTH; k++) begin
      if (k + 1 < DEPTH) begin
        valid_d[k] = valid_q[k+1];
        tag_d[k]   = tag_q[k+1];
      end else begin
        valid_d[k] = 1'b0;
        tag_d[k]   = '0;
      end
    end
    if (issue) begin
      valid_d[lat-1] = 1'b1;
      tag_d[lat-1]   = tag_i;
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      valid_q <= '0;
      tag_q   <= '0;
    end else begin
      valid_q <= valid_d;
      tag_q   <= tag_d;
    end
  end

  // An empty slot always holds zeros (it was shifted in from the zero fill at the top), so a queue
  // with no valid slot is all zeros and need not shift: the simulator skips the wide copies then.
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      for (int k = 0; k < DEPTH; k++) data_q[k] <= '0;  // one slot at a time: a tile is wide
    end else if (issue || |valid_q) begin
      for (int k = 0; k < DEPTH; k++) data_q[k] <= (k + 1 < DEPTH) ? data_q[(k+1) % DEPTH] : '0;
      if (issue) data_q[lat-1] <= result;
    end
  end

  // the queue relies on an empty slot holding zeros (it then need not shift)
  `ASSERT(EmptySlotZero, !valid_q[0] |-> data_q[0] == '0)
  `ASSERT(TopSlotShiftsInEmpty, !valid_q[DEPTH-1] |-> tag_q[DEPTH-1] == '0)
  `ASSERT_KNOWN(ReadyKnown, ready_o)
  `ASSERT_KNOWN(ValidKnown, valid_o)
  `ASSERT_KNOWN(BusyKnown, busy_o)
  `ASSERT(ResultKnown, valid_o |-> !$isunknown({tag_o, result_o}))

  assign valid_o  = valid_q[0];
  assign tag_o    = tag_q[0];
  assign result_o = data_q[0];
  assign busy_o   = |valid_q[DEPTH-1:1];

endmodule
