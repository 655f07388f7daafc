// chip: the two-TensorCore chip (doc/chip.md, architecture.md section 8). Two tensorcores on NoC
// nodes 0 and 1, the HBM controller (rtl/hbm.sv behind noc_hbm_ep.sv) on node 2, the SparseCore
// (rtl/sparsecore.sv behind noc_sc_ep.sv) on node 3, shared by both cores through the command
// arbiter rtl/sc_cmd_arb.sv (one lookup at a time; each core's SXU interlocks with the lookups it
// issued). Two instances of rtl/noc.sv:
// - the request ring carries the cores' and the SparseCore's HBM requests (to node 2) and the
//   cores' signals (to a core);
// - the response ring carries the HBM's responses (node 2 to the requesting core or SparseCore).
// Every endpoint takes its ejected flits without waiting for its own injection on the same ring
// (the cores always take responses and signals; the HBM endpoint books a buffer entry for a
// request's response before taking it), which is doc/noc.md's consumption assumption; packets are
// never dropped and each (source, destination) pair keeps its order (the ring guarantees both).
//
// Load and read ports: one shared address/data bus per memory, a write enable per core
// (imem_we_i[k] writes core k); read data per core. Control and status per core, as tensorcore's.
//
// Latency at zero load (doc/chip.md, the test test_chip.py::test_remote_read_latency): a request
// the core offers in cycle t is on the HBM's port at t + 1 + H*(LINK_LATENCY+1) (H hops from
// the core to node 2), its response is offered on the response ring HBM_LATENCY + 1 cycles after
// the HBM accepts it, and reaches the core 1 + H'*(LINK_LATENCY+1) later, H + H' = NOC_NODES
// (one way round the ring): a read's round trip is HBM_LATENCY + 3 + NOC_NODES*(LINK_LATENCY+1)
// cycles, 115 at the defaults, against HBM_LATENCY for the single-core sim_top.
module chip
  import tinytpu_pkg::*;
#(
  parameter int unsigned N                = 4,
  parameter int unsigned VMEM_TILES       = 1024,
  parameter int unsigned PSUM_TILES       = 64,
  parameter int unsigned IMEM_WORDS       = 4096,
  parameter int unsigned HBM_TILES        = 1 << 20,
  parameter int unsigned HBM_LATENCY      = 100,
  parameter int unsigned HBM_BW_NUM       = 1,
  parameter int unsigned HBM_BW_DEN       = 1,
  parameter int unsigned NOC_NODES        = 4,
  parameter int unsigned NOC_LINK_LATENCY = 2,
  localparam int unsigned CORES           = 2,
  localparam int unsigned HBM_NODE        = 2,
  localparam int unsigned SPARSE_NODE     = 3,
  localparam int unsigned L               = N * N,
  localparam int unsigned IMEM_AW         = $clog2(IMEM_WORDS),
  localparam int unsigned VA_W            = $clog2(VMEM_TILES),
  localparam int unsigned PA_W            = $clog2(PSUM_TILES),
  localparam int unsigned ID_W            = 4,
  localparam int unsigned PW              = L * 32,
  localparam int unsigned TAG_W           = 34,
  localparam int unsigned RTAG_W          = 1,
  localparam int unsigned FLAG_W          = $clog2(SIG_FLAGS),
  // a read's extra round trip over the rings: sizes the DMA's tag FIFO for full bandwidth
  localparam int unsigned RT_EXTRA        = 3 + NOC_NODES * (NOC_LINK_LATENCY + 1)
) (
  input  logic                                 clk_i,
  input  logic                                 rst_ni,
  input  logic [CORES-1:0]                     imem_we_i,
  input  logic [IMEM_AW-1:0]                   imem_addr_i,
  input  logic [63:0]                          imem_wdata_i,
  input  logic [CORES-1:0]                     vmem_we_i,
  input  logic [VA_W-1:0]                      vmem_addr_i,
  input  logic [L-1:0][31:0]                   vmem_wdata_i,
  output logic [CORES-1:0][L-1:0][31:0]        vmem_rdata_o,
  input  logic [CORES-1:0]                     psum_we_i,
  input  logic [PA_W-1:0]                      psum_addr_i,
  input  logic [L-1:0][31:0]                   psum_wdata_i,
  output logic [CORES-1:0][L-1:0][31:0]        psum_rdata_o,
  input  logic [CORES-1:0]                     sreg_we_i,
  input  logic [3:0]                           sreg_addr_i,
  input  logic [31:0]                          sreg_wdata_i,
  output logic [CORES-1:0][31:0]               sreg_rdata_o,
  input  logic [CORES-1:0]                     start_i,
  output logic [CORES-1:0]                     ready_o,
  output logic [CORES-1:0]                     running_o,
  output logic [CORES-1:0]                     done_o,
  output trap_e [CORES-1:0]                    status_o,
  output logic [CORES-1:0][31:0]               pc_o,
  output logic [CORES-1:0][31:0]               cycles_o,
  output logic [CORES-1:0][NUM_PERF-1:0][31:0] perf_o,
  output logic                                 err_o      // an HBM, ring or endpoint error (sticky)
);
  `include "assert.svh"
  `ASSERT_INIT(FourNodes, NOC_NODES == 4)  // cores 0 and 1, HBM 2, SparseCore 3

  // the rings' ports
  logic [NOC_NODES-1:0]             q_inj_valid, q_inj_ready, q_ej_valid, q_ej_ready;
  logic [NOC_NODES-1:0][ID_W-1:0]   q_inj_dst, q_ej_src;
  logic [NOC_NODES-1:0][TAG_W-1:0]  q_inj_tag, q_ej_tag;
  logic [NOC_NODES-1:0][PW-1:0]     q_inj_data, q_ej_data;
  logic [NOC_NODES-1:0]             r_inj_valid, r_inj_ready, r_ej_valid, r_ej_ready;
  logic [NOC_NODES-1:0][ID_W-1:0]   r_inj_dst, r_ej_src;
  logic [NOC_NODES-1:0][RTAG_W-1:0] r_inj_tag, r_ej_tag;
  logic [NOC_NODES-1:0][PW-1:0]     r_inj_data, r_ej_data;
  logic                             q_err, r_err;
  logic [CORES-1:0]                 ep_err;

  // the cores' SparseCore command ports (to sc_cmd_arb)
  logic [CORES-1:0]                 emb_valid, emb_fp, emb_busy, emb_chk_valid, emb_chk_bad;
  logic [CORES-1:0][31:0]           emb_tbase, emb_rows, emb_idx, emb_dst;
  logic [CORES-1:0][4:0]            emb_width;
  logic [CORES-1:0][15:0]           emb_bag;
  logic [CORES-1:0][7:0]            emb_bags;

  // ---------------------------------------------------------------------------------------------
  // the cores and their endpoints (core k on node k)
  for (genvar k = 0; k < int'(CORES); k++) begin : g_core
    logic               req_valid, req_ready, req_we, rsp_valid, rsp_we;
    logic [31:0]        req_addr;
    logic [L-1:0][31:0] req_wdata, rsp_rdata;
    logic               sig_valid, sig_ready, rx_valid;
    logic [3:0]         sig_core;
    logic [FLAG_W-1:0]  sig_flag, rx_flag;

    tensorcore #(
      .N(N), .VMEM_TILES(VMEM_TILES), .PSUM_TILES(PSUM_TILES), .IMEM_WORDS(IMEM_WORDS),
      .HBM_TILES(HBM_TILES), .HBM_LATENCY(HBM_LATENCY + RT_EXTRA), .CORES(CORES)
    ) u_core (
      .clk_i,
      .rst_ni,
      .imem_we_i       (imem_we_i[k]),
      .imem_addr_i,
      .imem_wdata_i,
      .vmem_we_i       (vmem_we_i[k]),
      .vmem_addr_i,
      .vmem_wdata_i,
      .vmem_rdata_o    (vmem_rdata_o[k]),
      .psum_we_i       (psum_we_i[k]),
      .psum_addr_i,
      .psum_wdata_i,
      .psum_rdata_o    (psum_rdata_o[k]),
      .sreg_we_i       (sreg_we_i[k]),
      .sreg_addr_i,
      .sreg_wdata_i,
      .sreg_rdata_o    (sreg_rdata_o[k]),
      .start_i         (start_i[k]),
      .ready_o         (ready_o[k]),
      .running_o       (running_o[k]),
      .done_o          (done_o[k]),
      .status_o        (status_o[k]),
      .pc_o            (pc_o[k]),
      .cycles_o        (cycles_o[k]),
      .perf_o          (perf_o[k]),
      .hbm_req_valid_o (req_valid),
      .hbm_req_ready_i (req_ready),
      .hbm_req_we_o    (req_we),
      .hbm_req_addr_o  (req_addr),
      .hbm_req_wdata_o (req_wdata),
      .hbm_rsp_valid_i (rsp_valid),
      .hbm_rsp_we_i    (rsp_we),
      .hbm_rsp_rdata_i (rsp_rdata),
      .sig_valid_o     (sig_valid),
      .sig_core_o      (sig_core),
      .sig_flag_o      (sig_flag),
      .sig_ready_i     (sig_ready),
      .sig_rx_valid_i  (rx_valid),
      .sig_rx_flag_i   (rx_flag),
      // the SparseCore on node 3 through sc_cmd_arb: busy and the check's answer are this core's
      .emb_valid_o     (emb_valid[k]),
      .emb_fp_o        (emb_fp[k]),
      .emb_tbase_o     (emb_tbase[k]),
      .emb_rows_o      (emb_rows[k]),
      .emb_width_o     (emb_width[k]),
      .emb_bag_o       (emb_bag[k]),
      .emb_bags_o      (emb_bags[k]),
      .emb_idx_o       (emb_idx[k]),
      .emb_dst_o       (emb_dst[k]),
      .emb_busy_i      (emb_busy[k]),
      .emb_chk_valid_i (emb_chk_valid[k]),
      .emb_chk_bad_i   (emb_chk_bad[k])
    );

    noc_core_ep #(
      .N(N), .ID_W(ID_W), .CORES(CORES), .HBM_NODE(HBM_NODE), .FLAG_W(FLAG_W)
    ) u_ep (
      .clk_i,
      .rst_ni,
      .hbm_req_valid_i (req_valid),
      .hbm_req_ready_o (req_ready),
      .hbm_req_we_i    (req_we),
      .hbm_req_addr_i  (req_addr),
      .hbm_req_wdata_i (req_wdata),
      .hbm_rsp_valid_o (rsp_valid),
      .hbm_rsp_we_o    (rsp_we),
      .hbm_rsp_rdata_o (rsp_rdata),
      .sig_valid_i     (sig_valid),
      .sig_core_i      (sig_core),
      .sig_flag_i      (sig_flag),
      .sig_ready_o     (sig_ready),
      .sig_rx_valid_o  (rx_valid),
      .sig_rx_flag_o   (rx_flag),
      .req_inj_valid_o (q_inj_valid[k]),
      .req_inj_ready_i (q_inj_ready[k]),
      .req_inj_dst_o   (q_inj_dst[k]),
      .req_inj_tag_o   (q_inj_tag[k]),
      .req_inj_data_o  (q_inj_data[k]),
      .req_ej_valid_i  (q_ej_valid[k]),
      .req_ej_ready_o  (q_ej_ready[k]),
      .req_ej_src_i    (q_ej_src[k]),
      .req_ej_tag_i    (q_ej_tag[k]),
      .rsp_ej_valid_i  (r_ej_valid[k]),
      .rsp_ej_ready_o  (r_ej_ready[k]),
      .rsp_ej_tag_i    (r_ej_tag[k]),
      .rsp_ej_data_i   (r_ej_data[k]),
      .err_o           (ep_err[k])
    );

    // a core never answers on the response ring
    assign r_inj_valid[k] = 1'b0;
    assign r_inj_dst[k]   = '0;
    assign r_inj_tag[k]   = '0;
    assign r_inj_data[k]  = '0;
    logic unused_core;
    assign unused_core = ^{r_inj_ready[k], q_ej_data[k], r_ej_src[k]};
  end

  // ---------------------------------------------------------------------------------------------
  // the HBM on node 2
  logic               h_req_valid, h_req_ready, h_req_we, h_rsp_valid, h_rsp_we, h_err, hep_err;
  logic [31:0]        h_req_addr;
  logic [L-1:0][31:0] h_req_wdata, h_rsp_rdata;

  noc_hbm_ep #(.N(N), .ID_W(ID_W), .HBM_LATENCY(HBM_LATENCY)) u_hbm_ep (
    .clk_i,
    .rst_ni,
    .req_ej_valid_i  (q_ej_valid[HBM_NODE]),
    .req_ej_ready_o  (q_ej_ready[HBM_NODE]),
    .req_ej_src_i    (q_ej_src[HBM_NODE]),
    .req_ej_tag_i    (q_ej_tag[HBM_NODE]),
    .req_ej_data_i   (q_ej_data[HBM_NODE]),
    .hbm_req_valid_o (h_req_valid),
    .hbm_req_ready_i (h_req_ready),
    .hbm_req_we_o    (h_req_we),
    .hbm_req_addr_o  (h_req_addr),
    .hbm_req_wdata_o (h_req_wdata),
    .hbm_rsp_valid_i (h_rsp_valid),
    .hbm_rsp_we_i    (h_rsp_we),
    .hbm_rsp_rdata_i (h_rsp_rdata),
    .rsp_inj_valid_o (r_inj_valid[HBM_NODE]),
    .rsp_inj_ready_i (r_inj_ready[HBM_NODE]),
    .rsp_inj_dst_o   (r_inj_dst[HBM_NODE]),
    .rsp_inj_tag_o   (r_inj_tag[HBM_NODE]),
    .rsp_inj_data_o  (r_inj_data[HBM_NODE]),
    .err_o           (hep_err)
  );

  hbm #(
    .N(N), .TILES(HBM_TILES), .LATENCY(HBM_LATENCY), .BW_NUM(HBM_BW_NUM), .BW_DEN(HBM_BW_DEN)
  ) u_hbm (
    .clk_i,
    .rst_ni,
    .req_valid_i (h_req_valid),
    .req_ready_o (h_req_ready),
    .req_we_i    (h_req_we),
    .req_addr_i  (h_req_addr),
    .req_wdata_i (h_req_wdata),
    .rsp_valid_o (h_rsp_valid),
    .rsp_we_o    (h_rsp_we),
    .rsp_rdata_o (h_rsp_rdata),
    .err_o       (h_err)
  );

  // the HBM node sends nothing on the request ring and takes nothing from the response ring
  assign q_inj_valid[HBM_NODE] = 1'b0;
  assign q_inj_dst[HBM_NODE]   = '0;
  assign q_inj_tag[HBM_NODE]   = '0;
  assign q_inj_data[HBM_NODE]  = '0;
  assign r_ej_ready[HBM_NODE]  = 1'b1;

  // ---------------------------------------------------------------------------------------------
  // node 3: the SparseCore, a pure HBM client of node 2 (noc_sc_ep), its commands from both cores
  logic               sc_valid, sc_ready, sc_fp, sc_chk_valid, sc_chk_bad, sc_busy, scep_err;
  logic [31:0]        sc_tbase, sc_rows, sc_idx, sc_dst;
  logic [4:0]         sc_width;
  logic [15:0]        sc_bag;
  logic [7:0]         sc_bags;
  logic               s_req_valid, s_req_ready, s_req_we, s_rsp_valid, s_rsp_we;
  logic [31:0]        s_req_addr;
  logic [L-1:0][31:0] s_req_wdata, s_rsp_rdata;

  sc_cmd_arb #(.CORES(CORES)) u_sc_arb (
    .clk_i,
    .rst_ni,
    .emb_valid_i     (emb_valid),
    .emb_fp_i        (emb_fp),
    .emb_tbase_i     (emb_tbase),
    .emb_rows_i      (emb_rows),
    .emb_width_i     (emb_width),
    .emb_bag_i       (emb_bag),
    .emb_bags_i      (emb_bags),
    .emb_idx_i       (emb_idx),
    .emb_dst_i       (emb_dst),
    .emb_busy_o      (emb_busy),
    .emb_chk_valid_o (emb_chk_valid),
    .emb_chk_bad_o   (emb_chk_bad),
    .cmd_valid_o     (sc_valid),
    .cmd_ready_i     (sc_ready),
    .cmd_fp_o        (sc_fp),
    .cmd_tbase_o     (sc_tbase),
    .cmd_rows_o      (sc_rows),
    .cmd_width_o     (sc_width),
    .cmd_bag_o       (sc_bag),
    .cmd_bags_o      (sc_bags),
    .cmd_idx_o       (sc_idx),
    .cmd_dst_o       (sc_dst),
    .chk_valid_i     (sc_chk_valid),
    .chk_bad_i       (sc_chk_bad),
    .busy_i          (sc_busy)
  );

  // HBM_LATENCY sizes its tag FIFO only: the ring's round trip on top keeps a tile a cycle moving
  sparsecore #(.N(N), .HBM_TILES(HBM_TILES), .HBM_LATENCY(HBM_LATENCY + RT_EXTRA)) u_sc (
    .clk_i,
    .rst_ni,
    .cmd_valid_i     (sc_valid),
    .cmd_ready_o     (sc_ready),
    .cmd_fp_i        (sc_fp),
    .cmd_tbase_i     (sc_tbase),
    .cmd_rows_i      (sc_rows),
    .cmd_width_i     (sc_width),
    .cmd_bag_i       (sc_bag),
    .cmd_bags_i      (sc_bags),
    .cmd_idx_i       (sc_idx),
    .cmd_dst_i       (sc_dst),
    .chk_valid_o     (sc_chk_valid),
    .chk_bad_o       (sc_chk_bad),
    .busy_o          (sc_busy),
    .hbm_req_valid_o (s_req_valid),
    .hbm_req_ready_i (s_req_ready),
    .hbm_req_we_o    (s_req_we),
    .hbm_req_addr_o  (s_req_addr),
    .hbm_req_wdata_o (s_req_wdata),
    .hbm_rsp_valid_i (s_rsp_valid),
    .hbm_rsp_we_i    (s_rsp_we),
    .hbm_rsp_rdata_i (s_rsp_rdata)
  );

  noc_sc_ep #(.N(N), .ID_W(ID_W), .HBM_NODE(HBM_NODE)) u_sc_ep (
    .clk_i,
    .rst_ni,
    .hbm_req_valid_i (s_req_valid),
    .hbm_req_ready_o (s_req_ready),
    .hbm_req_we_i    (s_req_we),
    .hbm_req_addr_i  (s_req_addr),
    .hbm_req_wdata_i (s_req_wdata),
    .hbm_rsp_valid_o (s_rsp_valid),
    .hbm_rsp_we_o    (s_rsp_we),
    .hbm_rsp_rdata_o (s_rsp_rdata),
    .req_inj_valid_o (q_inj_valid[SPARSE_NODE]),
    .req_inj_ready_i (q_inj_ready[SPARSE_NODE]),
    .req_inj_dst_o   (q_inj_dst[SPARSE_NODE]),
    .req_inj_tag_o   (q_inj_tag[SPARSE_NODE]),
    .req_inj_data_o  (q_inj_data[SPARSE_NODE]),
    .req_ej_valid_i  (q_ej_valid[SPARSE_NODE]),
    .req_ej_ready_o  (q_ej_ready[SPARSE_NODE]),
    .rsp_ej_valid_i  (r_ej_valid[SPARSE_NODE]),
    .rsp_ej_ready_o  (r_ej_ready[SPARSE_NODE]),
    .rsp_ej_src_i    (r_ej_src[SPARSE_NODE]),
    .rsp_ej_tag_i    (r_ej_tag[SPARSE_NODE]),
    .rsp_ej_data_i   (r_ej_data[SPARSE_NODE]),
    .err_o           (scep_err)
  );

  // the SparseCore answers nobody on the response ring
  assign r_inj_valid[SPARSE_NODE] = 1'b0;
  assign r_inj_dst[SPARSE_NODE]   = '0;
  assign r_inj_tag[SPARSE_NODE]   = '0;
  assign r_inj_data[SPARSE_NODE]  = '0;

  // ---------------------------------------------------------------------------------------------
  // the two rings
  logic [NOC_NODES-1:0] q_bad, q_busy, q_cont, r_bad, r_busy, r_cont;

  noc #(.NODES(NOC_NODES), .LINK_LATENCY(NOC_LINK_LATENCY), .ID_W(ID_W), .TAG_W(TAG_W), .PW(PW)) u_req_ring (
    .clk_i,
    .rst_ni,
    .inj_valid_i (q_inj_valid),
    .inj_ready_o (q_inj_ready),
    .inj_dst_i   (q_inj_dst),
    .inj_tag_i   (q_inj_tag),
    .inj_data_i  (q_inj_data),
    .ej_valid_o  (q_ej_valid),
    .ej_ready_i  (q_ej_ready),
    .ej_src_o    (q_ej_src),
    .ej_tag_o    (q_ej_tag),
    .ej_data_o   (q_ej_data),
    .bad_dst_o   (q_bad),
    .err_o       (q_err),
    .link_busy_o (q_busy),
    .contend_o   (q_cont)
  );

  noc #(.NODES(NOC_NODES), .LINK_LATENCY(NOC_LINK_LATENCY), .ID_W(ID_W), .TAG_W(RTAG_W), .PW(PW)) u_rsp_ring (
    .clk_i,
    .rst_ni,
    .inj_valid_i (r_inj_valid),
    .inj_ready_o (r_inj_ready),
    .inj_dst_i   (r_inj_dst),
    .inj_tag_i   (r_inj_tag),
    .inj_data_i  (r_inj_data),
    .ej_valid_o  (r_ej_valid),
    .ej_ready_i  (r_ej_ready),
    .ej_src_o    (r_ej_src),
    .ej_tag_o    (r_ej_tag),
    .ej_data_o   (r_ej_data),
    .bad_dst_o   (r_bad),
    .err_o       (r_err),
    .link_busy_o (r_busy),
    .contend_o   (r_cont)
  );

  assign err_o = q_err || r_err || (|ep_err) || hep_err || h_err || scep_err;

  logic unused;
  assign unused = ^{q_bad, q_busy, q_cont, r_bad, r_busy, r_cont, q_inj_ready[HBM_NODE],
                    r_inj_ready[SPARSE_NODE], q_ej_src[SPARSE_NODE], q_ej_tag[SPARSE_NODE], q_ej_data[SPARSE_NODE],
                    r_ej_src[HBM_NODE], r_ej_tag[HBM_NODE], r_ej_data[HBM_NODE], r_ej_valid[HBM_NODE]};
endmodule
