// tensorcore: one TinyTPU TensorCore. The SXU fetches, decodes and issues (up to two instructions a
// cycle: a VLD on its load channel, a VST on its store channel, a compute op on channel A, a
// scalar op, any two of different kinds); this module is the vector datapath around it: the VRF (operands read in the issue cycle, its write-backs bypassed),
// VMEM and PSUM (synchronous reads, one cycle), the VPU, the XLU and the MXU, and the two VRF
// write-back ports the SXU books per result (port 0: wb_src selects the producer; port 1: VLD).
//
// Load and read ports (used while the core is not running): program words, VMEM and PSUM tiles,
// scalar registers; VMEM/PSUM reads return data the cycle after the address. ready_o is high
// from the first cycle after reset (VMEM/PSUM read zero until written) while the core is idle or
// done; start_i runs the program from pc 0.
// Latency: VLD/PLD/VMOV/VZERO/VFILL/VSPLAT/XLU results are written 1 cycle after issue, VPU
// results after vpu_latency(fn), VGATHER results after 2 (VMEM's core read port gathers the
// elements in the issue cycle, then one register stage), PEPI results after 2 (PSUM's read in the
// issue cycle, then the epilogue stage of rtl/epi.sv); VST/PST/VSCATTER write in the issue
// cycle; MXU commands reach the MXU one cycle after issue (an MLW's weight tile is read from VMEM
// in the issue cycle). DMA.IN/DMA.OUT go to the DMA engine's queue in the issue cycle
// (rtl/dma.sv), which copies between the HBM port and VMEM's DMA port in the background.
//
// HBM port (rtl/hbm.sv is outside the core: a chip top may share one HBM between cores): a
// valid/ready request {we, addr, wdata}, responses in request order without back-pressure
// (hbm_rsp_we_i: a write's acknowledge, else a read's data).
//
// Signal port (SIG.SEND / SIG.WAIT, doc/chip.md): sig_valid_o offers {core, flag} for one cycle,
// only when sig_ready_i is high (taken at once); sig_rx_valid_i adds one to flag sig_rx_flag_i
// (counted from the next cycle). CORES bounds SIG.SEND's core id (no_such_core beyond). The
// single-core co-sim (sim_top) loops the port back: core 0 signals itself.
// SparseCore port (rtl/sparsecore.sv sits outside the core, a pure HBM client): the SXU sends an
// EMB.BAG/EMB.FBAG on emb_* and holds its issue until emb_chk_valid_i (doc/sparsecore.md).
module tensorcore
  import tinytpu_pkg::*;
#(
  parameter int unsigned N          = 4,
  parameter int unsigned VMEM_TILES = 1024,
  parameter int unsigned PSUM_TILES = 64,
  parameter int unsigned IMEM_WORDS = 4096,
  parameter int unsigned HBM_TILES  = 1 << 20,
  parameter int unsigned HBM_LATENCY = 100,  // sizes the DMA's tag FIFO (one a request in flight)
  parameter int unsigned CORES      = 1,
  localparam int unsigned L         = N * N,
  localparam int unsigned FLAG_W    = $clog2(SIG_FLAGS),
  localparam int unsigned IMEM_AW   = $clog2(IMEM_WORDS),
  localparam int unsigned VA_W      = $clog2(VMEM_TILES),
  localparam int unsigned PA_W      = $clog2(PSUM_TILES)
) (
  input  logic                      clk_i,
  input  logic                      rst_ni,
  // load / read ports
  input  logic                      imem_we_i,
  input  logic [IMEM_AW-1:0]        imem_addr_i,
  input  logic [63:0]               imem_wdata_i,
  input  logic                      vmem_we_i,
  input  logic [VA_W-1:0]           vmem_addr_i,
  input  logic [L-1:0][31:0]        vmem_wdata_i,
  output logic [L-1:0][31:0]        vmem_rdata_o,
  input  logic                      psum_we_i,
  input  logic [PA_W-1:0]           psum_addr_i,
  input  logic [L-1:0][31:0]        psum_wdata_i,
  output logic [L-1:0][31:0]        psum_rdata_o,
  input  logic                      sreg_we_i,
  input  logic [3:0]                sreg_addr_i,
  input  logic [31:0]               sreg_wdata_i,
  output logic [31:0]               sreg_rdata_o,
  // control and status
  input  logic                      start_i,
  output logic                      ready_o,
  output logic                      running_o,
  output logic                      done_o,
  output trap_e                     status_o,
  output logic [31:0]               pc_o,
  output logic [31:0]               cycles_o,
  output logic [NUM_PERF-1:0][31:0] perf_o,
  // HBM
  output logic                      hbm_req_valid_o,
  input  logic                      hbm_req_ready_i,
  output logic                      hbm_req_we_o,
  output logic [31:0]               hbm_req_addr_o,
  output logic [L-1:0][31:0]        hbm_req_wdata_o,
  input  logic                      hbm_rsp_valid_i,
  input  logic                      hbm_rsp_we_i,
  input  logic [L-1:0][31:0]        hbm_rsp_rdata_i,
  // signals
  output logic                      sig_valid_o,
  output logic [3:0]                sig_core_o,
  output logic [FLAG_W-1:0]         sig_flag_o,
  input  logic                      sig_ready_i,
  input  logic                      sig_rx_valid_i,
  input  logic [FLAG_W-1:0]         sig_rx_flag_i,
  // --- SparseCore command port (doc/sparsecore.md): EMB.BAG/EMB.FBAG to a SparseCore outside the
  // core; without one, tie the inputs to 0 (busy 0: DMAs never wait; an EMB.BAG waits for ever) ---
  output logic                      emb_valid_o,
  output logic                      emb_fp_o,
  output logic [31:0]               emb_tbase_o,
  output logic [31:0]               emb_rows_o,
  output logic [4:0]                emb_width_o,
  output logic [15:0]               emb_bag_o,
  output logic [7:0]                emb_bags_o,
  output logic [31:0]               emb_idx_o,
  output logic [31:0]               emb_dst_o,
  input  logic                      emb_busy_i,
  input  logic                      emb_chk_valid_i,
  input  logic                      emb_chk_bad_i
);
  logic vmem_init, psum_init, running;

  // ---------------------------------------------------------------------------------------------
  // SXU
  logic [7:0]         op, fn;
  logic [3:0]         rd, ra, rb, rc, rs;
  dp_e                dp;        // the decoded datapath of channel A (tinytpu_pkg::decode)
  logic               iss;
  logic [31:0]        iss_scalar, iss_addr, iss_addr2;
  logic [L-1:0][31:0] iss_eaddr;
  logic [L-1:0]       iss_emask;
  logic               wb_valid;
  logic [3:0]         wb_vd;
  wb_e                wb_src;   // write-back source (tinytpu_pkg::wb_e, from the ISA table)
  logic               ld_valid, st_valid, wl_valid;
  logic [31:0]        ld_addr, st_addr;
  logic [3:0]         wl_vd;
  logic [L-1:0][31:0] va, vb, vc, vs;              // operands, after the write-through bypass
  logic [L-1:0][31:0] va_rf, vb_rf, vc_rf, vs_rf;  // the VRF's read ports
  logic               vpu_ready, mxu_ready, mxu_idle, mxu_row, mxu_vdone, mxu_pdone;
  logic               dma_ready, dma_idle, dma_tile, dma_done;
  logic [15:0]        dma_rows, dma_vstride;
  logic [31:0]        dma_hstride;

  sxu #(
    .N(N), .VMEM_TILES(VMEM_TILES), .PSUM_TILES(PSUM_TILES), .IMEM_WORDS(IMEM_WORDS), .HBM_TILES(HBM_TILES),
    .CORES(CORES)
  ) u_sxu (
    .clk_i,
    .rst_ni,
    .imem_we_i,
    .imem_waddr_i (imem_addr_i),
    .imem_wdata_i,
    .sreg_we_i,
    .sreg_waddr_i (sreg_addr_i),
    .sreg_wdata_i,
    .sreg_raddr_i (sreg_addr_i),
    .sreg_rdata_o,
    .start_i      (start_i && ready_o),
    .running_o    (running),
    .done_o,
    .status_o,
    .pc_o,
    .cycles_o,
    .perf_o,
    .dec_op_o     (op),
    .dec_fn_o     (fn),
    .dec_rd_o     (rd),
    .dec_ra_o     (ra),
    .dec_rb_o     (rb),
    .dec_rc_o     (rc),
    .dec_rs_o     (rs),
    .dec_dp_o     (dp),
    .iss_valid_o  (iss),
    .iss_scalar_o (iss_scalar),
    .iss_addr_o   (iss_addr),
    .iss_addr2_o  (iss_addr2),
    .dma_rows_o   (dma_rows),
    .dma_hstride_o(dma_hstride),
    .dma_vstride_o(dma_vstride),
    .iss_eaddr_o  (iss_eaddr),
    .iss_emask_o  (iss_emask),
    .ld_valid_o   (ld_valid),
    .ld_addr_o    (ld_addr),
    .st_valid_o   (st_valid),
    .st_addr_o    (st_addr),
    .wb_valid_o   (wb_valid),
    .wb_vd_o      (wb_vd),
    .wb_src_o     (wb_src),
    .wl_valid_o   (wl_valid),
    .wl_vd_o      (wl_vd),
    .va_tile_i    (va),
    .vm_tile_i    (vc),
    .vpu_ready_i  (vpu_ready),
    .mxu_ready_i  (mxu_ready),
    .mxu_idle_i   (mxu_idle),
    .mxu_busy_i   (mxu_row),
    .mxu_vdone_i  (mxu_vdone),
    .mxu_pdone_i  (mxu_pdone),
    .dma_ready_i  (dma_ready),
    .dma_idle_i   (dma_idle),
    .dma_tile_i   (dma_tile),
    .dma_done_i   (dma_done),
    .sig_valid_o,
    .sig_core_o,
    .sig_flag_o,
    .sig_ready_i,
    .sig_rx_valid_i,
    .sig_rx_flag_i,
    // --- SparseCore ---
    .emb_valid_o,
    .emb_fp_o,
    .emb_tbase_o,
    .emb_rows_o,
    .emb_width_o,
    .emb_bag_o,
    .emb_bags_o,
    .emb_idx_o,
    .emb_dst_o,
    .emb_busy_i,
    .emb_chk_valid_i,
    .emb_chk_bad_i
  );

  assign running_o = running;
  assign ready_o   = vmem_init && psum_init && !running;

  // ---------------------------------------------------------------------------------------------
  // VRF: operands in the issue cycle (port s: store data, the SXU picks the register), write-back
  // port 0 for every producer but VLD, port 1 for VLD (so a pair's VLD and compute op both land)
  logic [L-1:0][31:0] wb_data, vmem_rd;  // vmem_rd: VMEM's core read data (VLD's write-back)
  logic               vrf_err;

  vrf #(.N(N)) u_vrf (
    .clk_i,
    .rst_ni,
    .ra_addr_i (ra),
    .ra_data_o (va_rf),
    .rb_addr_i (rb),
    .rb_data_o (vb_rf),
    .rc_addr_i (rc),
    .rc_data_o (vc_rf),
    .rs_addr_i (rs),
    .rs_data_o (vs_rf),
    .we0_i     (wb_valid),
    .waddr0_i  (wb_vd),
    .wdata0_i  (wb_data),
    .we1_i     (wl_valid),
    .waddr1_i  (wl_vd),
    .wdata1_i  (vmem_rd),
    .err_o     (vrf_err)
  );

  // write-through bypass: an operand whose register is written back in this cycle takes the data
  // being written, so a reader issues in the cycle its operand lands (the SXU's RAW check lets
  // it); this covers every consumer of the read ports (VPU, XLU, VMOV, VST/PST/VSCATTER data, and
  // the SXU's VEXTRACT lane, VGATHER/VSCATTER offsets and mask)
  function automatic logic [L-1:0][31:0] fwd(input logic [3:0] r, input logic [L-1:0][31:0] q);
    logic [L-1:0][31:0] res;
    if (wl_valid && wl_vd == r) res = vmem_rd;
    else if (wb_valid && wb_vd == r) res = wb_data;
    else res = q;
    return res;
  endfunction

  assign va = fwd(ra, va_rf);
  assign vb = fwd(rb, vb_rf);
  assign vc = fwd(rc, vc_rf);
  assign vs = fwd(rs, vs_rf);

  // ---------------------------------------------------------------------------------------------
  // VMEM and PSUM: the core ports serve VLD/VST/PLD/PST/MLW/VGATHER/VSCATTER while running, the
  // load ports otherwise. A pair's VLD and VST use VMEM's read and write port in the same cycle
  // (the same tile: the VLD reads the old data, as sequential order wants)
  logic               is_vld, is_vst, is_pld, is_pst, is_mlw, is_mmul, is_gth, is_sct, is_epi;
  assign is_vld  = ld_valid;  // VLD/VST come on the SXU's load and store channels
  assign is_vst  = st_valid;
  assign is_pld  = iss && dp == DP_PLD;
  assign is_pst  = iss && dp == DP_PST;
  assign is_epi  = iss && dp == DP_EPI;   // PEPI: a PSUM read like PLD's, through rtl/epi.sv
  assign is_mlw  = iss && dp == DP_MXU && op == OP_MLW;   // the MXU's two commands
  assign is_mmul = iss && dp == DP_MXU && (op == OP_MMUL || op == OP_MMULBF);
  assign is_gth  = iss && dp == DP_GATHER;
  assign is_sct  = iss && dp == DP_SCATTER;

  logic [L-1:0][31:0] psum_rd, mxu_vdata;
  logic               mxu_vreq, mxu_pwe, mxu_pacc, mxu_pfp;
  logic [31:0]        mxu_vaddr, mxu_paddr;
  logic [$clog2(N)-1:0] mxu_prow;
  logic [N*32-1:0]    mxu_pdata;
  logic               unused_err;
  logic [5:0]         mem_errs;  // VMEM rd, wr, mxu; PSUM rd, wr, mxu (checked at the end of this file)
  logic               dvm_req, dvm_we, dvm_err, dvr_req, dvr_err;
  logic [31:0]        dvm_addr, dvr_addr;
  logic [L-1:0][31:0] dvm_wdata, dvm_rdata, dvr_rdata;

  vmem #(.N(N), .TILES(VMEM_TILES)) u_vmem (
    .clk_i,
    .rst_ni,
    .init_done_o (vmem_init),
    .rd_req_i    (running ? (is_vld || is_mlw || is_gth) : 1'b1),
    .rd_addr_i   (running ? (is_vld ? ld_addr : iss_addr) : 32'(vmem_addr_i)),
    .rd_elem_i   (running && is_gth),
    .rd_eaddr_i  (iss_eaddr),
    .rd_data_o   (vmem_rd),
    .rd_err_o    (mem_errs[0]),
    .wr_req_i    (running ? (is_vst || is_sct) : vmem_we_i),
    .wr_addr_i   (running ? (is_vst ? st_addr : iss_addr) : 32'(vmem_addr_i)),
    .wr_elem_i   (running && is_sct),
    .wr_mask_i   (iss_emask),
    .wr_eaddr_i  (iss_eaddr),
    .wr_data_i   (running ? vs : vmem_wdata_i),
    .wr_err_o    (mem_errs[1]),
    .mxu_req_i   (mxu_vreq),
    .mxu_addr_i  (mxu_vaddr),
    .mxu_data_o  (mxu_vdata),
    .mxu_err_o   (mem_errs[2]),
    .dma_req_i   (dvm_req),
    .dma_we_i    (dvm_we),
    .dma_addr_i  (dvm_addr),
    .dma_wdata_i (dvm_wdata),
    .dma_rdata_o (dvm_rdata),
    .dma_err_o   (dvm_err),
    .dmr_req_i   (dvr_req),
    .dmr_addr_i  (dvr_addr),
    .dmr_rdata_o (dvr_rdata),
    .dmr_err_o   (dvr_err)
  );

  psum #(.N(N), .TILES(PSUM_TILES)) u_psum (
    .clk_i,
    .rst_ni,
    .init_done_o (psum_init),
    .rd_req_i    (running ? (is_pld || is_epi) : 1'b1),
    .rd_addr_i   (running ? iss_addr : 32'(psum_addr_i)),
    .rd_data_o   (psum_rd),
    .rd_err_o    (mem_errs[3]),
    .wr_req_i    (running ? is_pst : psum_we_i),
    .wr_addr_i   (running ? iss_addr : 32'(psum_addr_i)),
    .wr_data_i   (running ? vs : psum_wdata_i),
    .wr_err_o    (mem_errs[4]),
    .mxu_we_i    (mxu_pwe),
    .mxu_acc_i   (mxu_pacc),
    .mxu_fp_i    (mxu_pfp),
    .mxu_addr_i  (mxu_paddr),
    .mxu_row_i   (mxu_prow),
    .mxu_data_i  (mxu_pdata),
    .mxu_err_o   (mem_errs[5])
  );

  assign vmem_rdata_o = vmem_rd;
  assign psum_rdata_o = psum_rd;

  // ---------------------------------------------------------------------------------------------
  // VPU and XLU
  logic               vpu_valid, xlu_valid;
  logic [L-1:0][31:0] vpu_res, xlu_res;
  logic [3:0]         vpu_tag, xlu_tag;
  logic               unused_vpu_busy, vpu_res_valid, xlu_res_valid;

  assign vpu_valid = iss && dp == DP_VPU;
  assign xlu_valid = iss && dp == DP_XLU;

  vpu #(.N(N), .TAG_W(4)) u_vpu (
    .clk_i,
    .rst_ni,
    .valid_i  (vpu_valid),
    .ready_o  (vpu_ready),
    .fn_i     (vpu_fn_e'(fn)),
    .a_i      (va),
    .b_i      (vb),
    .c_i      (vc),
    .tag_i    (rd),
    .valid_o  (vpu_res_valid),
    .result_o (vpu_res),
    .tag_o    (vpu_tag),
    .busy_o   (unused_vpu_busy)
  );

  logic bscalar;
  assign bscalar = fn == XLU_BSCALAR;

  xlu #(.N(N), .TAG_W(4)) u_xlu (
    .clk_i,
    .rst_ni,
    .valid_i  (xlu_valid),
    .fn_i     (xlu_fn_e'(fn)),
    .a_i      (va),
    .idx_i    (vb),
    .k_i      (iss_scalar),
    .r0_i     ($clog2(N)'(bscalar ? iss_scalar[31:16] : iss_scalar[15:0])),
    .c0_i     ($clog2(N)'(iss_scalar[15:0])),
    .tag_i    (rd),
    .valid_o  (xlu_res_valid),
    .result_o (xlu_res),
    .tag_o    (xlu_tag)
  );

  // VMOV / VZERO / VFILL / VSPLAT: registered in the issue cycle, written the next
  logic [L-1:0][31:0] mov_q;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) mov_q <= '0;
    else if (iss) begin
      unique case (op)
        OP_VMOV:              mov_q <= va;
        OP_VZERO:             mov_q <= '0;
        OP_VFILL, OP_VSPLAT:  mov_q <= {L{iss_scalar}};
        default: ;
      endcase
    end
  end

  // VGATHER: the gathered tile from VMEM's read port, held one more cycle (write-back at 2)
  logic               gth_fresh_q;
  logic [L-1:0][31:0] gth_q;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      gth_fresh_q <= 1'b0;
      gth_q       <= '0;
    end else begin
      gth_fresh_q <= is_gth;
      if (gth_fresh_q) gth_q <= vmem_rd;
    end
  end

  // PEPI: the PSUM tile read in the issue cycle through the epilogue (bias on port b, the
  // requantising parameters on port c), written back 2 cycles after issue
  logic [L-1:0][31:0] epi_res;
  logic               unused_epi_valid;
  epi #(.N(N)) u_epi (
    .clk_i,
    .rst_ni,
    .valid_i  (is_epi),
    .mode_i   (fn[1:0]),
    .bias_i   (vb),
    .vq_i     (vc),
    .acc_i    (psum_rd),
    .valid_o  (unused_epi_valid),
    .res_o    (epi_res)
  );

  always_comb begin
    unique case (wb_src)
      WB_VPU:  wb_data = vpu_res;
      WB_XLU:  wb_data = xlu_res;
      WB_PLD:  wb_data = psum_rd;
      WB_GATHER: wb_data = gth_q;
      WB_EPI:  wb_data = epi_res;
      default: wb_data = mov_q;
    endcase
  end

  // ---------------------------------------------------------------------------------------------
  // MXU: a command register between the issue and the MXU's queue (the MLW's weights arrive from
  // VMEM the cycle after issue); it holds a command the MXU does not accept yet
  logic               cmd_q, cmd_mlw_q, cmd_acc_q, cmd_bf16_q, cmd_fresh_q;
  logic [31:0]        cmd_paddr_q, cmd_vaddr_q;
  logic [7:0]         cmd_t_q;
  logic [L-1:0][31:0] cmd_w_q, cmd_w;
  logic               mxu_cmd_ready, mxu_busy, unused_mxu_stall, mxu_err;

  assign cmd_w     = cmd_fresh_q ? vmem_rd : cmd_w_q;
  assign mxu_ready = !cmd_q || mxu_cmd_ready;
  assign mxu_idle  = !cmd_q && !mxu_busy;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      cmd_q       <= 1'b0;
      cmd_mlw_q   <= 1'b0;
      cmd_acc_q   <= 1'b0;
      cmd_bf16_q  <= 1'b0;
      cmd_fresh_q <= 1'b0;
      cmd_paddr_q <= '0;
      cmd_vaddr_q <= '0;
      cmd_t_q     <= '0;
      cmd_w_q     <= '0;
    end else begin
      cmd_fresh_q <= 1'b0;
      cmd_w_q     <= cmd_w;
      if (cmd_q && mxu_cmd_ready) cmd_q <= 1'b0;
      if (is_mlw || is_mmul) begin
        cmd_q       <= 1'b1;
        cmd_mlw_q   <= is_mlw;
        cmd_fresh_q <= is_mlw;
        cmd_acc_q   <= rc[0];
        cmd_bf16_q  <= op == OP_MMULBF;
        cmd_paddr_q <= iss_addr;
        cmd_vaddr_q <= is_mlw ? iss_addr : iss_addr2;
        cmd_t_q     <= is_mlw ? 8'd1 : fn;
      end
    end
  end

  mxu #(.N(N), .VMEM_TILES(VMEM_TILES), .PSUM_TILES(PSUM_TILES)) u_mxu (
    .clk_i,
    .rst_ni,
    .cmd_valid_i  (cmd_q),
    .cmd_ready_o  (mxu_cmd_ready),
    .cmd_mlw_i    (cmd_mlw_q),
    .cmd_w_i      (cmd_w),
    .cmd_paddr_i  (cmd_paddr_q),
    .cmd_vaddr_i  (cmd_vaddr_q),
    .cmd_t_i      (cmd_t_q),
    .cmd_acc_i    (cmd_acc_q),
    .cmd_bf16_i   (cmd_bf16_q),
    .err_o        (mxu_err),
    .vmem_req_o   (mxu_vreq),
    .vmem_addr_o  (mxu_vaddr),
    .vmem_rdata_i (mxu_vdata),
    .psum_we_o    (mxu_pwe),
    .psum_acc_o   (mxu_pacc),
    .psum_fp_o    (mxu_pfp),
    .psum_addr_o  (mxu_paddr),
    .psum_row_o   (mxu_prow),
    .psum_wdata_o (mxu_pdata),
    .busy_o       (mxu_busy),
    .row_o        (mxu_row),
    .stall_o      (unused_mxu_stall),
    .vdone_o      (mxu_vdone),
    .pdone_o      (mxu_pdone)
  );

  // ---------------------------------------------------------------------------------------------
  // DMA: DMA.IN/DMA.OUT enter the engine's queue in the issue cycle with the shape in force (the
  // SXU holds the issue while the queue is full)
  logic is_dma;
  assign is_dma = iss && dp == DP_DMA;

  dma #(.N(N), .QDEPTH(DMA_QDEPTH), .HBM_LATENCY(HBM_LATENCY)) u_dma (  // DMA_QDEPTH: tinytpu_pkg (isa.DMA_QDEPTH)
    .clk_i,
    .rst_ni,
    .cmd_valid_i     (is_dma),
    .cmd_ready_o     (dma_ready),
    .cmd_out_i       (op == OP_DMAOUT),
    .cmd_vaddr_i     (iss_addr),
    .cmd_haddr_i     (iss_addr2),
    .cmd_t_i         (fn),
    .cmd_rows_i      (dma_rows),
    .cmd_hstride_i   (dma_hstride),
    .cmd_vstride_i   (dma_vstride),
    .idle_o          (dma_idle),
    .tile_o          (dma_tile),
    .done_o          (dma_done),
    .vm_req_o        (dvm_req),
    .vm_we_o         (dvm_we),
    .vm_addr_o       (dvm_addr),
    .vm_wdata_o      (dvm_wdata),
    .vr_req_o        (dvr_req),
    .vr_addr_o       (dvr_addr),
    .vr_rdata_i      (dvr_rdata),
    .hbm_req_valid_o,
    .hbm_req_ready_i,
    .hbm_req_we_o,
    .hbm_req_addr_o,
    .hbm_req_wdata_o,
    .hbm_rsp_valid_i,
    .hbm_rsp_we_i,
    .hbm_rsp_rdata_i
  );

  assign unused_err = ^{unused_vpu_busy, vpu_tag, xlu_tag, vpu_res_valid, xlu_res_valid, unused_mxu_stall,
                        rc[3:1], unused_epi_valid, dvm_rdata};  // dvm_rdata: the DMA port only writes (DMA.OUT reads on dmr)

  // ---------------------------------------------------------------------------------------------
  // Unit errors: a legal program never raises one. The SXU traps before it would issue a VMEM or
  // PSUM access out of range or an MMUL with T = 0 or tiles out of range, and it never books both
  // VRF write ports for one register in a cycle; an err_o rising means the SXU let a bad access
  // through. The core ports count only for accesses made while running (the idle load/read ports
  // take whatever address the loader drives); an err_o reports the access of the cycle before.
  `include "assert.svh"
  logic running_q;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) running_q <= 1'b0;
    else         running_q <= running;
  end
  `ASSERT(NoVrfWriteConflict, !vrf_err)
  `ASSERT(NoCoreVmemErr, running_q |-> !mem_errs[0] && !mem_errs[1])
  `ASSERT(NoMxuVmemErr, !mem_errs[2])
  `ASSERT(NoCorePsumErr, running_q |-> !mem_errs[3] && !mem_errs[4])
  // a PEPI's result is written back exactly when the epilogue stage holds it
  `ASSERT(EpiWriteBackTimed, wb_valid && wb_src == WB_EPI |-> unused_epi_valid)
  `ASSERT(NoMxuPsumErr, !mem_errs[5])
  `ASSERT(NoMxuCmdErr, !mxu_err)
  `ASSERT(NoDmaVmemErr, !dvm_err && !dvr_err)
  // the DMA runs only while the core runs (HALT, a trap's drain and FENCE wait for it), so the
  // loader's VMEM ports never meet it
  `ASSERT(DmaIdleUnlessRunning, !running |-> dma_idle)
  `ASSERT(EmbIdleUnlessRunning, !running |-> !emb_busy_i)  // --- SparseCore: HALT and drains wait for it
  `ASSERT(DmaHbmInRange, hbm_req_valid_o |-> hbm_req_addr_o < 32'(HBM_TILES))

endmodule
