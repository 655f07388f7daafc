// noc_fifo: the first-word-fall-through FIFO of the NoC routers (rtl/noc_router.sv): a virtual
// channel's input buffer and an endpoint's injection queue.
//
// Contract
// - push_i writes data_i at the clock edge; pop_i removes the head (head_o, valid while valid_o).
//   A push and a pop in one cycle are allowed at any occupancy but full (push) or empty (pop).
// - The caller never pushes into a full FIFO and never pops an empty one: the routers' credits
//   (VC buffers) and ready (injection queue) guarantee it; the assertions below check it.
// - count_o is the occupancy in [0, DEPTH]; head_o is the oldest entry, visible the cycle after
//   its push (no bypass: a flit spends at least one cycle in a router).
module noc_fifo #(
  parameter int unsigned  W     = 8,
  parameter int unsigned  DEPTH = 4,
  localparam int unsigned AW    = DEPTH > 1 ? $clog2(DEPTH) : 1,
  localparam int unsigned CW    = $clog2(DEPTH + 1)
) (
  input  logic          clk_i,
  input  logic          rst_ni,
  input  logic          push_i,
  input  logic [W-1:0]  data_i,
  input  logic          pop_i,
  output logic [W-1:0]  head_o,
  output logic          valid_o,
  output logic [CW-1:0] count_o
);
  `include "assert.svh"
  `ASSERT_INIT(DepthPositive, DEPTH >= 1)

  logic [W-1:0]  mem_q [DEPTH];
  logic [W-1:0]  mem_d [DEPTH];
  logic [AW-1:0] wr_q, wr_d, rd_q, rd_d;
  logic [CW-1:0] cnt_q, cnt_d;

  function automatic logic [AW-1:0] next(logic [AW-1:0] p);
    return p == AW'(DEPTH - 1) ? '0 : p + AW'(1);
  endfunction

  always_comb begin
    mem_d = mem_q;
    wr_d  = wr_q;
    rd_d  = rd_q;
    if (push_i) begin
      mem_d[wr_q] = data_i;
      wr_d        = next(wr_q);
    end
    if (pop_i) rd_d = next(rd_q);
    cnt_d = cnt_q + CW'(push_i) - CW'(pop_i);
  end

  // the contents need no reset: nothing reads an entry before it is written (valid_o)
  always_ff @(posedge clk_i) begin
    mem_q <= mem_d;
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      wr_q  <= '0;
      rd_q  <= '0;
      cnt_q <= '0;
    end else begin
      wr_q  <= wr_d;
      rd_q  <= rd_d;
      cnt_q <= cnt_d;
    end
  end

  assign head_o  = mem_q[rd_q];
  assign valid_o = cnt_q != '0;
  assign count_o = cnt_q;

  // never written when full, never read when empty, the count within [0, DEPTH]
  `ASSERT(NoOverflow, push_i |-> cnt_q < CW'(DEPTH))
  `ASSERT(NoUnderflow, pop_i |-> cnt_q != '0)
  `ASSERT(CountInRange, cnt_q <= CW'(DEPTH))
  `ASSERT_KNOWN(ControlKnown, {push_i, pop_i})
endmodule
