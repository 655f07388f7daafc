// SXU: the scalar unit of the TensorCore. Each cycle it reads the words at pc and pc + 1 from its
// program memory, decodes them with tinytpu_pkg::decode (generated from the ISA table: legality,
// datapath, issue class, registers read and written, write-back source and latency, memory
// address paths), checks them (reserved bits, operand ranges, tile addresses, loop stack) and
// either executes them here (scalar ALU, branches, loops, counters, VEXTRACT) or issues them to
// the vector datapath of the TensorCore (VRF, VMEM, PSUM, VPU, XLU, MXU).
//
// Dual issue (doc/core.md): slot 0 is the instruction at pc; slot 1 (pc + 1) issues in the same
// cycle when slot 0 issues and the two are of different dual-issue classes (load, store, compute,
// scalar: the ISA table's, doc/isa.md lists them; the decode gives them), a VST + VLD pair
// accesses two different tiles (the VLD must see the store; a VLD + VST of one tile reads the
// old data, as VMEM's read and write ports do in one cycle), slot 1 neither reads nor rewrites a
// register slot 0 writes, neither is the innermost loop's last body word, pc + 1 is not the
// program's last word, and slot 1 would issue now without a stall or a trap. Otherwise slot 1
// issues later as slot 0, so traps, trap pcs and ordering are those of single issue. Issue
// channels: A (dec_*, iss_*) carries every vector instruction but VLD/VST (a pair's compute op),
// the load channel (ld_*) a VLD and the store channel (st_*) a VST of either slot, so a pair's
// VLD and VST reach VMEM's read and write ports in the same cycle; a second scalar ALU serves
// slot 1.
//
// Interlocks: every instruction that writes a vector register books a VRF write-back port for the
// cycle its result arrives (VLD: port 1, table wl_q; every other producer: port 0, table wb_q); a
// reader of a register with a write booked for a later cycle waits (RAW; the TensorCore forwards
// the writes landing in this cycle to the operands, so the reader issues in that cycle), a
// writer whose result would land at or before an earlier write to the same register waits (WAW),
// a booked slot or a busy unit holds the issue (unit). The VMEM and PSUM tiles that in-flight MXU
// commands read or write are tracked per command until it finishes with them (mxu_own: the
// bounding ranges of the MMULs whose tiles are still being read / rows written); a VST/PST/PLD
// touching them, or a VSCATTER with an active lane in them, waits. So every program has sequential
// semantics while the MXU and multi-cycle VPU ops run in the background. VGATHER/VSCATTER element
// addresses (sb + imm + va[l]) are computed and range-checked here on every (active) lane once
// their vector operands are ready, and issued on iss_eaddr_o.
//
// Latency: fetch, decode, execute/issue and next-pc are one combinational stage, so the SXU
// issues up to two instructions per cycle when nothing stalls; taken branches and loop back-edges
// cost no cycle. A vector write issued in cycle t with latency L is written at the end of cycle
// t+L and a reader of it issues in cycle t+L (write-through): dependent single-cycle ops run back
// to back. pc_o is slot 0's pc; it advances by 2 after a pair. HALT finishes in its own cycle when
// the MXU is idle and no vector write lands later; otherwise the core drains first.
//
// Signals (doc/chip.md): SIG_FLAGS 32-bit flag counters. SIG.SEND traps no_such_core for
// sa >= CORES, else waits for the DMA engine to be idle (release: every earlier HBM write is
// acknowledged) and for sig_ready_i, then offers {sa, flag} on sig_valid_o in its issue cycle.
// SIG.WAIT waits until its flag is at least count and subtracts count in its issue cycle; a
// signal arriving on sig_rx_* counts from the next cycle.
module sxu
  import tinytpu_pkg::*;
#(
  parameter int unsigned N          = 4,
  parameter int unsigned VMEM_TILES = 1024,
  parameter int unsigned PSUM_TILES = 64,
  parameter int unsigned IMEM_WORDS = 4096,
  parameter int unsigned HBM_TILES  = 1 << 20,
  parameter int unsigned CORES      = 1,       // SIG.SEND's legal core ids: 0 .. CORES-1
  localparam int unsigned IMEM_AW   = $clog2(IMEM_WORDS),
  localparam int unsigned LANE_W    = $clog2(N*N),
  localparam int unsigned FLAG_W    = $clog2(SIG_FLAGS)
) (
  input  logic                      clk_i,
  input  logic                      rst_ni,
  // load ports (used while the core is idle)
  input  logic                      imem_we_i,
  input  logic [IMEM_AW-1:0]        imem_waddr_i,
  input  logic [63:0]               imem_wdata_i,
  input  logic                      sreg_we_i,
  input  logic [3:0]                sreg_waddr_i,
  input  logic [31:0]               sreg_wdata_i,
  input  logic [3:0]                sreg_raddr_i,
  output logic [31:0]               sreg_rdata_o,
  // control and status
  input  logic                      start_i,
  output logic                      running_o,     // started and not yet done
  output logic                      done_o,        // halted or trapped, background idle
  output trap_e                     status_o,      // TRAP_OK after HALT, else the trap code
  output logic [31:0]               pc_o,          // next pc to issue; the trap pc once done
  output logic [31:0]               cycles_o,
  output logic [NUM_PERF-1:0][31:0] perf_o,
  // the decoded instruction (valid every cycle; the VRF reads ra/rb/rc combinationally)
  output logic [7:0]                dec_op_o,
  output logic [7:0]                dec_fn_o,
  output logic [3:0]                dec_rd_o,
  output logic [3:0]                dec_ra_o,
  output logic [3:0]                dec_rb_o,
  output logic [3:0]                dec_rc_o,
  output logic [3:0]                dec_rs_o,      // VRF port s: VST/PST data (rb), VSCATTER's (rd)
  output dp_e                       dec_dp_o,      // the datapath of channel A's instruction (the decode)
  // issue of a vector-side instruction (VSPLAT, VLD..VFILL, VPU, XLU, MLW, MMUL)
  output logic                      iss_valid_o,
  output logic [31:0]               iss_scalar_o,  // VSPLAT: sa; XROTS/XSROTS: sb; else imm
  output logic [31:0]               iss_addr_o,    // checked tile address (MMUL: PSUM dst; DMA: VMEM base)
  output logic [31:0]               iss_addr2_o,   // MMUL: VMEM src; DMA: HBM base
  // the DMA shape in force (DMA.CFG): a DMA.IN/DMA.OUT issued on channel A carries it
  output logic [15:0]               dma_rows_o,
  output logic [31:0]               dma_hstride_o,
  output logic [15:0]               dma_vstride_o,
  output logic [N*N-1:0][31:0]      iss_eaddr_o,   // VGATHER/VSCATTER: checked element addresses
  output logic [N*N-1:0]            iss_emask_o,   // VSCATTER: active lanes (vm != 0)
  // issue of a VLD and of a VST (each from either slot: a pair may carry one of each)
  output logic                      ld_valid_o,
  output logic [31:0]               ld_addr_o,     // checked tile address
  output logic                      st_valid_o,    // the data is on VRF port s
  output logic [31:0]               st_addr_o,     // checked tile address
  // VRF write-backs booked for the end of this cycle: port 0 every producer but VLD, port 1 VLD
  output logic                      wb_valid_o,
  output logic [3:0]                wb_vd_o,
  output wb_e                       wb_src_o,
  output logic                      wl_valid_o,
  output logic [3:0]                wl_vd_o,
  // VEXTRACT reads lane [r][c] of vector register ra (the VRF's read port a); VGATHER/VSCATTER
  // read their lane offsets there and VSCATTER its mask from register rc (read port c)
  input  logic [N*N-1:0][31:0]      va_tile_i,
  input  logic [N*N-1:0][31:0]      vm_tile_i,
  // unit status
  input  logic                      vpu_ready_i,   // the VPU accepts the decoded function now
  input  logic                      mxu_ready_i,   // the MXU accepts a command now
  input  logic                      mxu_idle_i,    // no MXU command queued or running
  input  logic                      mxu_busy_i,    // the MXU streams an activation row
  input  logic                      mxu_vdone_i,   // the oldest MMUL's last VMEM tile is read now
  input  logic                      mxu_pdone_i,   // the oldest MMUL's last result row is written now
  input  logic                      dma_ready_i,   // the DMA queue accepts a command now
  input  logic                      dma_idle_i,    // no DMA command queued, walking or in flight
  input  logic                      dma_tile_i,    // the DMA moved a tile (an HBM request accepted)
  input  logic                      dma_done_i,    // the oldest DMA command completed
  // signals: SIG.SEND's offer (taken in the cycle it is offered, sig_ready_i), and arrivals
  output logic                      sig_valid_o,
  output logic [3:0]                sig_core_o,
  output logic [FLAG_W-1:0]         sig_flag_o,
  input  logic                      sig_ready_i,
  input  logic                      sig_rx_valid_i,
  input  logic [FLAG_W-1:0]         sig_rx_flag_i,
  // --- SparseCore (doc/sparsecore.md): EMB.BAG/EMB.FBAG commands and their index check ---
  output logic                      emb_valid_o,   // a lookup to the SparseCore (held until its check)
  output logic                      emb_fp_o,
  output logic [31:0]               emb_tbase_o,
  output logic [31:0]               emb_rows_o,
  output logic [4:0]                emb_width_o,
  output logic [15:0]               emb_bag_o,
  output logic [7:0]                emb_bags_o,
  output logic [31:0]               emb_idx_o,
  output logic [31:0]               emb_dst_o,
  input  logic                      emb_busy_i,    // a lookup accepted and not finished (0: none, no SparseCore)
  input  logic                      emb_chk_valid_i, // the index check of the lookup sent
  input  logic                      emb_chk_bad_i    // ... found an index outside [0, rows)
);

  // issue-to-write-back latencies come from the decode (the ISA table); VLD's, which sizes the load
  // table, is fixed by its datapath (tinytpu_pkg::LAT_VLD: VMEM's registered read)
  localparam int unsigned VLD_LAT = LAT_VLD;
  localparam int unsigned SLOTS = 16;  // > the longest latency (isa.check_table: at most 15)
  localparam int unsigned LSLOTS = VLD_LAT + 1;  // the load table: VLD's one latency
  localparam logic signed [33:0] VT = 34'(VMEM_TILES), PT = 34'(PSUM_TILES), VE = 34'(VMEM_TILES*N*N);
  localparam logic signed [51:0] VT52 = 52'(VMEM_TILES), HT52 = 52'(HBM_TILES);

  typedef enum logic [1:0] {S_IDLE, S_RUN, S_DRAIN, S_DONE} state_e;

  // the scalar ALU (LI, SADDI, SALU): one per slot
  function automatic logic [31:0] salu(input logic [7:0] op, input logic [7:0] fn,
                                       input logic [31:0] a, input logic [31:0] b,
                                       input logic [31:0] imm);
    logic [31:0] res;
    if (op == OP_LI) begin
      res = imm;
    end else if (op == OP_SADDI) begin
      res = a + imm;
    end else begin
      unique case (fn)
        SALU_ADD: res = a + b;
        SALU_SUB: res = a - b;
        SALU_MUL: res = a * b;
        SALU_AND: res = a & b;
        SALU_OR:  res = a | b;
        SALU_XOR: res = a ^ b;
        SALU_SHL: res = a << b[4:0];
        SALU_SHR: res = a >> b[4:0];
        SALU_SRA: res = $unsigned($signed(a) >>> b[4:0]);
        SALU_SLT: res = {31'd0, $signed(a) < $signed(b)};
        default:  res = {31'd0, a < b};
      endcase
    end
    return res;
  endfunction

  typedef struct packed {
    logic       valid;
    logic [3:0] vd;
    wb_e        src;
  } wb_t;

  // ---------------------------------------------------------------------------------------------
  // state
  state_e                    state_q;
  logic [IMEM_AW-1:0]        pc_q;
  logic [IMEM_AW:0]          len_q;        // program length: highest loaded address + 1
  logic [63:0]               imem_q [IMEM_WORDS];
  logic [31:0]               sreg_q [16];
  trap_e                     status_q;
  logic [31:0]               trap_pc_q;
  logic [31:0]               cycles_q;
  logic [NUM_PERF-1:0][31:0] perf_q;
  wb_t  [SLOTS-1:0]          wb_q;         // port 0 bookings: slot k lands at the end of now+k
  wb_t  [LSLOTS-1:0]         wl_q;         // port 1 (VLD) bookings, same indexing
  // loop stack: body start, last body pc (signed: may lie outside the program), remaining count
  logic [2:0]                depth_q;
  logic [IMEM_AW-1:0]        lp_start_q [LOOP_DEPTH];
  logic signed [33:0]        lp_last_q  [LOOP_DEPTH];
  logic [31:0]               lp_rem_q   [LOOP_DEPTH];
  // tiles owned by in-flight MXU commands (bounding ranges, inclusive)
  logic                      own_v, own_p, own_full;
  logic signed [33:0]        own_v_lo, own_v_hi, own_p_lo, own_p_hi;
  // the DMA shape (DMA.CFG; 1 row after reset and at start) and its row spans (rows-1)*stride
  logic [15:0]               dcfg_rows_q;
  logic [31:0]               dcfg_hs_q;
  logic [15:0]               dcfg_vs_q;
  logic signed [51:0]        dcfg_hspan_q, dcfg_vspan_q;
  // tiles owned by in-flight DMA commands: one entry per command (in command order, released
  // when the engine reports the command done), its direction and its VMEM and HBM bounding boxes
  // (inclusive). DMA.IN writes its VMEM box and reads its HBM box, DMA.OUT the other way round.
  localparam int unsigned DT = 8;  // commands in flight at most; a DMA waits for a free entry
  localparam int unsigned DTW = $clog2(DT);
  logic [DT-1:0]             de_valid_q;
  logic [DT-1:0]             de_out_q;
  logic signed [51:0]        de_vlo_q [DT];
  logic signed [51:0]        de_vhi_q [DT];
  logic signed [51:0]        de_hlo_q [DT];
  logic signed [51:0]        de_hhi_q [DT];
  logic [DTW:0]              de_wr_q, de_rd_q;

  // ---------------------------------------------------------------------------------------------
  // decode: both slots through tinytpu_pkg::decode, generated from the ISA table (fields, legality
  // for this N, datapath, issue class, registers read and written, write-back source and latency,
  // address paths, counters); slot 0 is the word at pc, slot 1 the word at pc + 1
  word_t       w0, w1;
  dec_t        d0, d1;
  logic [7:0]  op, fn;
  logic [3:0]  rd, ra, rb, rc;
  logic [31:0] imm, sa, sb;
  logic [15:0] immhi, immlo;

  assign w0    = word_t'(imem_q[pc_q]);
  assign d0    = decode(w0, N);
  assign op    = w0.op;
  assign fn    = w0.fn;
  assign rd    = w0.rd;
  assign ra    = w0.ra;
  assign rb    = w0.rb;
  assign rc    = w0.rc;
  assign imm   = w0.imm;
  assign immhi = imm[IMMHI_LSB - IMM_LSB +: IMMHI_W];
  assign immlo = imm[IMMLO_LSB - IMM_LSB +: IMMLO_W];
  assign sa    = sreg_q[ra];
  assign sb    = sreg_q[rb];

  // slot 0's datapath and memory operands
  logic is_vld, is_vst, is_vpu, is_mxu, is_elem, is_span, ld_port, is_dma, dma_out;
  assign is_vld  = d0.dp == DP_VLD;                  // on the load channel
  assign is_vst  = d0.dp == DP_VST;                  // on the store channel
  assign is_vpu  = d0.dp == DP_VPU;                  // waits for the VPU's ready
  assign is_mxu  = d0.dp == DP_MXU;                  // waits for the MXU's ready, owns tiles
  assign is_elem = d0.ve_rd || d0.ve_wr;             // element addresses (VGATHER/VSCATTER)
  assign is_span = d0.mp_rd || d0.mp_wr;             // T-tile spans (MMUL: PSUM dst, VMEM src)
  assign is_dma  = d0.dp == DP_DMA;                  // DMA.IN/DMA.OUT: waits for the queue, owns tiles
  assign dma_out = d0.ha_wr;                         // DMA.OUT: HBM [sa + immhi], VMEM [sb + immlo]
  assign ld_port = d0.wb == WB_VLD;                  // writes through VRF port 1

  // vector register operands read at issue and the register written
  logic       rd_va, rd_vb, rd_vc, rd_vd, wr_vd;
  logic [3:0] lat;
  wb_e        src;
  assign rd_va = d0.rva;
  assign rd_vb = d0.rvb;
  assign rd_vc = d0.rvc;
  assign rd_vd = d0.rvd;
  assign wr_vd = d0.wvd;
  assign lat   = d0.lat;
  assign src   = d0.wb;

  // ---------------------------------------------------------------------------------------------
  // slot 1: the word at pc + 1 (only a pairable slot 1 issues, so some of its decode is unused)
  logic [IMEM_AW-1:0] pc1;
  logic [3:0]         rd1, ra1, rb1, rc1;
  logic [31:0]        imm1, sa1, sb1;
  issue_e             k0, k1;  // pairing classes

  assign pc1    = pc_q + 1'b1;
  assign w1     = word_t'(imem_q[pc1]);
  assign d1     = decode(w1, N);
  assign rd1    = w1.rd;
  assign ra1    = w1.ra;
  assign rb1    = w1.rb;
  assign rc1    = w1.rc;
  assign imm1   = w1.imm;
  assign sa1    = sreg_q[ra1];
  assign sb1    = sreg_q[rb1];
  assign k0     = d0.issue;
  assign k1     = d1.issue;

  logic       is_vld1, is_vpu1, ld_port1, illegal1;
  logic       rd_va1, rd_vb1, rd_vc1, wr_vd1, rd_sa1, rd_sb1;
  logic [3:0] lat1;
  wb_e        src1;
  assign is_vld1  = d1.dp == DP_VLD;
  assign is_vpu1  = d1.dp == DP_VPU;
  assign ld_port1 = d1.wb == WB_VLD;
  assign illegal1 = d1.illegal;
  assign rd_va1   = d1.rva;
  assign rd_vb1   = d1.rvb;
  assign rd_vc1   = d1.rvc;
  assign wr_vd1   = d1.wvd;
  assign lat1     = d1.lat;
  assign src1     = d1.wb;
  assign rd_sa1   = d1.rsa;
  assign rd_sb1   = d1.rsb;

  // ---------------------------------------------------------------------------------------------
  // addresses and their checks (signed arithmetic on the full values: nothing wraps)
  logic signed [33:0] addr, maddr_p, maddr_a, t_cnt;
  logic               vmem_oob, psum_oob;
  assign addr    = 34'($signed(sa)) + 34'($signed(imm));
  assign maddr_p = 34'($signed(sa)) + 34'($signed(immhi));
  assign maddr_a = 34'($signed(sb)) + 34'($signed(immlo));
  assign t_cnt   = 34'(fn);

  // element addresses of VGATHER/VSCATTER: every lane of a gather is active, a scatter's lanes
  // are active where vm != 0; an active lane out of [0, VMEM_TILES*N*N) traps
  logic signed [33:0]             ebase;
  logic [N*N-1:0]                 eact, eoob;
  logic [N*N-1:0][33:0]           eaddr;
  assign ebase = 34'($signed(sb)) + 34'($signed(imm));
  always_comb begin
    // per lane: one '0 over all N*N 34-bit addresses passes Verilator's replication limit at N = 16
    for (int l = 0; l < N*N; l++) eaddr[l] = '0;
    eact        = '0;
    eoob        = '0;
    iss_eaddr_o = '0;
    // only for a gather/scatter (which also keeps the co-simulation from evaluating them always)
    if (is_elem) begin
      for (int l = 0; l < N*N; l++) begin
        eaddr[l] = ebase + 34'($signed(va_tile_i[l]));
        eact[l]  = d0.ve_rd || (d0.ve_wr && vm_tile_i[l] != '0);
        eoob[l]  = eact[l] && ($signed(eaddr[l]) < 0 || $signed(eaddr[l]) >= VE);
        iss_eaddr_o[l] = eaddr[l][31:0];
      end
    end
  end
  assign iss_emask_o = eact;

  logic signed [33:0] addr1;
  logic               vmem_oob1;
  assign addr1     = 34'($signed(sa1)) + 34'($signed(imm1));
  assign vmem_oob1 = (d1.vt_rd || d1.vt_wr) && (addr1 < 0 || addr1 >= VT);

  // DMA.IN/DMA.OUT: the bounding boxes of all rows with the shape in force (rows-1 row strides
  // beyond the base, T tiles a row); VMEM first, then HBM (the golden's order)
  logic signed [51:0] dvb, dhb, dv_lo, dv_hi, dh_lo, dh_hi;
  logic               hbm_oob;
  assign dvb   = dma_out ? 52'(maddr_a) : 52'(maddr_p);
  assign dhb   = dma_out ? 52'(maddr_p) : 52'(maddr_a);
  assign dv_lo = dvb;
  assign dv_hi = dvb + dcfg_vspan_q + 52'(t_cnt) - 52'sd1;
  assign dh_lo = dhb + (dcfg_hspan_q < 0 ? dcfg_hspan_q : 52'sd0);
  assign dh_hi = dhb + (dcfg_hspan_q > 0 ? dcfg_hspan_q : 52'sd0) + 52'(t_cnt) - 52'sd1;
  assign hbm_oob = is_dma && (dh_lo < 0 || dh_hi >= HT52);

  always_comb begin
    vmem_oob = 1'b0;
    psum_oob = 1'b0;
    if (d0.vt_rd || d0.vt_wr) vmem_oob = addr < 0 || addr >= VT;
    if (is_elem)              vmem_oob = eoob != '0;
    if (d0.pt_rd || d0.pt_wr) psum_oob = addr < 0 || addr >= PT;
    if (is_span) begin
      vmem_oob = maddr_a < 0 || maddr_a + t_cnt > VT;
      psum_oob = maddr_p < 0 || maddr_p + t_cnt > PT;
    end
    if (is_dma) vmem_oob = dv_lo < 0 || dv_hi >= VT52;
  end

  // ---------------------------------------------------------------------------------------------
  // loop stack and next pc
  logic [1:0]         top;
  logic signed [33:0] pc_s, loop_last, top_last;
  logic signed [31:0] loop_count;
  logic               loop_trap, take_branch, redirect, back_edge, push, pop, dec;
  logic signed [33:0] npc;

  assign top       = 2'(depth_q - 3'd1);
  assign top_last  = lp_last_q[top];
  assign pc_s      = 34'(pc_q);
  assign loop_last = pc_s + 34'($signed(op == OP_LOOPI ? 32'($signed(immlo)) : imm)) - 34'sd1;
  assign loop_count = op == OP_LOOPI ? 32'(immhi) : $signed(sa);

  always_comb begin
    unique case (fn[1:0])
      2'd0:    take_branch = sa == sb;
      2'd1:    take_branch = sa != sb;
      2'd2:    take_branch = $signed(sa) < $signed(sb);
      default: take_branch = $signed(sa) >= $signed(sb);
    endcase
  end

  always_comb begin
    loop_trap = 1'b0;
    redirect  = 1'b0;
    push      = 1'b0;
    pop       = 1'b0;
    dec       = 1'b0;
    back_edge = 1'b0;
    npc       = pc_s + 34'sd1;
    unique case (op)
      OP_BRANCH: if (take_branch) begin
        redirect = 1'b1;
        npc      = pc_s + 34'($signed(imm));
      end
      OP_JMP: begin
        redirect = 1'b1;
        npc      = pc_s + 34'($signed(imm));
      end
      OP_LOOP, OP_LOOPI: begin
        // checked whatever the count: a full stack or a body not nested strictly inside its parent
        loop_trap = depth_q == 3'(LOOP_DEPTH) || (depth_q != 0 && loop_last >= top_last);
        redirect  = 1'b1;
        if (loop_count <= 0) npc = loop_last + 34'sd1;
        else push = 1'b1;
      end
      OP_LBREAK: begin
        loop_trap = depth_q == 0;
        redirect  = 1'b1;
        pop       = 1'b1;
        npc       = top_last + 34'sd1;
      end
      default: ;
    endcase
    if (!redirect && depth_q != 0 && pc_s == top_last) begin
      back_edge = 1'b1;
      if (lp_rem_q[top] > 32'd1) begin
        dec = 1'b1;
        npc = 34'(lp_start_q[top]);
      end else begin
        pop = 1'b1;
      end
    end
  end

  logic imem_oob;
  assign imem_oob = npc < 0 || npc >= 34'(len_q);

  // ---------------------------------------------------------------------------------------------
  // interlocks
  logic [15:0] pending;   // vector registers with a booked write (either port)
  logic [15:0] unready;   // ... that lands after this cycle (slot 0's reaches readers by bypass)
  logic        late_waw;  // an earlier write to rd lands at or after this instruction's would
  logic        late_waw1; // the same for slot 1's rd1
  always_comb begin
    pending   = '0;
    unready   = '0;
    late_waw  = 1'b0;
    late_waw1 = 1'b0;
    for (int k = 0; k < SLOTS; k++) begin
      if (wb_q[k].valid) begin
        pending[wb_q[k].vd] = 1'b1;
        if (k != 0) unready[wb_q[k].vd] = 1'b1;
        if (wb_q[k].vd == rd && k >= int'(lat)) late_waw = 1'b1;
        if (wb_q[k].vd == rd1 && k >= int'(lat1)) late_waw1 = 1'b1;
      end
    end
    for (int k = 0; k < LSLOTS; k++) begin
      if (wl_q[k].valid) begin
        pending[wl_q[k].vd] = 1'b1;
        if (k != 0) unready[wl_q[k].vd] = 1'b1;
        if (wl_q[k].vd == rd && k >= int'(lat)) late_waw = 1'b1;
        if (wl_q[k].vd == rd1 && k >= int'(lat1)) late_waw1 = 1'b1;
      end
    end
  end

  logic in_v, in_p, in_e;  // the access hits tiles owned by the MXU
  assign in_v = own_v && addr >= own_v_lo && addr <= own_v_hi;
  assign in_p = own_p && addr >= own_p_lo && addr <= own_p_hi;
  // a scatter: the tile (element div N*N) of any active lane
  always_comb begin
    in_e = 1'b0;
    if (d0.ve_wr && own_v) begin
      for (int l = 0; l < N*N; l++) begin
        if (eact[l] && ($signed(eaddr[l]) >>> LANE_W) >= own_v_lo &&
            ($signed(eaddr[l]) >>> LANE_W) <= own_v_hi) in_e = 1'b1;
      end
    end
  end

  // DMA interlocks: an access against the tiles of the commands in flight (an inclusive range
  // [lo, hi] against each entry's box): VMEM written (DMA.IN entries: vw) or read (DMA.OUT: vr),
  // HBM written (DMA.OUT: hw) or read (DMA.IN: hr); a scatter's or gather's active lanes by their tiles
  function automatic logic overlap(input logic signed [51:0] a_lo, input logic signed [51:0] a_hi,
                                   input logic signed [51:0] lo, input logic signed [51:0] hi);
    return lo <= a_hi && a_lo <= hi;
  endfunction
  logic signed [51:0] a52, a152, m_lo, m_hi;
  logic               a_vw, a_vr, a1_vw, a1_vr, m_vw, dv_vw, dv_vr, dh_hw, dh_hr, e_dw, e_dr, stall_dmar;
  logic               de_full;
  assign a52     = 52'(addr);
  assign a152    = 52'(addr1);
  assign m_lo    = 52'(maddr_a);
  assign m_hi    = 52'(maddr_a) + 52'(t_cnt) - 52'sd1;
  assign de_full = de_wr_q - de_rd_q == (DTW+1)'(DT);
  always_comb begin
    a_vw = 1'b0; a_vr = 1'b0; a1_vw = 1'b0; a1_vr = 1'b0; m_vw = 1'b0;
    dv_vw = 1'b0; dv_vr = 1'b0; dh_hw = 1'b0; dh_hr = 1'b0; e_dw = 1'b0; e_dr = 1'b0;
    for (int e = 0; e < int'(DT); e++) begin
      if (de_valid_q[e]) begin
        if (overlap(de_vlo_q[e], de_vhi_q[e], a52, a52))   begin a_vw  |= !de_out_q[e]; a_vr  |= de_out_q[e]; end
        if (overlap(de_vlo_q[e], de_vhi_q[e], a152, a152)) begin a1_vw |= !de_out_q[e]; a1_vr |= de_out_q[e]; end
        if (overlap(de_vlo_q[e], de_vhi_q[e], dv_lo, dv_hi)) begin dv_vw |= !de_out_q[e]; dv_vr |= de_out_q[e]; end
        if (overlap(de_hlo_q[e], de_hhi_q[e], dh_lo, dh_hi)) begin dh_hw |= de_out_q[e]; dh_hr |= !de_out_q[e]; end
        if (!de_out_q[e] && overlap(de_vlo_q[e], de_vhi_q[e], m_lo, m_hi)) m_vw = 1'b1;
        // only for a gather/scatter (the co-simulation evaluates the lanes only then)
        if (is_elem) begin
          for (int l = 0; l < N*N; l++) begin
            if (eact[l] && overlap(de_vlo_q[e], de_vhi_q[e], 52'($signed(eaddr[l]) >>> LANE_W), 52'($signed(eaddr[l]) >>> LANE_W))) begin
              e_dw |= !de_out_q[e];
              e_dr |= de_out_q[e];
            end
          end
        end
      end
    end
  end
  // signals: the flag counters, SIG.WAIT's test and SIG.SEND's core check
  logic [31:0]       flag_q [SIG_FLAGS];
  logic              is_send, is_wait, core_oob, stall_sig;
  logic [FLAG_W-1:0] wflag;
  assign is_send   = op == OP_SIGSEND;
  assign is_wait   = op == OP_SIGWAIT;
  assign core_oob  = is_send && sa >= 32'(CORES);
  assign wflag     = immhi[FLAG_W-1:0];
  assign stall_sig = is_wait && flag_q[wflag] < 32'(immlo);

  always_comb begin
    stall_dmar = 1'b0;
    // reads of tiles a DMA.IN still writes
    if (d0.vt_rd && a_vw) stall_dmar = 1'b1;
    if (d0.ve_rd && e_dw) stall_dmar = 1'b1;
    if (is_mxu && is_span && m_vw) stall_dmar = 1'b1;
    // writes of tiles any DMA still reads or writes
    if (d0.vt_wr && (a_vw || a_vr)) stall_dmar = 1'b1;
    if (d0.ve_wr && (e_dw || e_dr)) stall_dmar = 1'b1;
    // a DMA against in-flight DMAs (VMEM: DMA.IN written tiles; HBM: the opposite direction) and,
    // for a DMA.IN, the VMEM tiles the MXU still reads
    if (is_dma && dma_out && (dv_vw || dh_hr)) stall_dmar = 1'b1;
    if (is_dma && !dma_out && (dv_vw || dv_vr || dh_hw ||
                               (own_v && overlap(52'(own_v_lo), 52'(own_v_hi), dv_lo, dv_hi))))
      stall_dmar = 1'b1;
    // DMA.WAIT: until the engine is idle; SIG.SEND too (release)
    if ((op == OP_DMAWAIT || is_send) && !dma_idle_i) stall_dmar = 1'b1;
    if (is_send && emb_busy_i) stall_dmar = 1'b1;  // release covers the SparseCore's HBM writes too
  end


  logic bg_idle, stall_raw, stall_waw, stall_unit, stall_fence, stall_dma, stall;
  assign bg_idle = mxu_idle_i && pending == '0 && dma_idle_i && !emb_busy_i;
  always_comb begin
    stall_raw   = (rd_va && unready[ra]) || (rd_vb && unready[rb]) || (rd_vc && unready[rc]) ||
                  (rd_vd && unready[rd]) || (d0.pt_rd && in_p);
    stall_waw   = (wr_vd && late_waw) || (d0.vt_wr && in_v) || (d0.pt_wr && in_p) || (d0.ve_wr && in_e);
    stall_unit  = (wr_vd && (ld_port ? wl_q[VLD_LAT].valid : wb_q[lat].valid)) ||
                  (is_vpu && !vpu_ready_i) ||
                  (is_mxu && (!mxu_ready_i || (is_span && own_full))) ||
                  (is_dma && (!dma_ready_i || de_full)) || emb_stall_unit ||
                  (is_send && !sig_ready_i);
    stall_dma   = stall_dmar || emb_stall_dma;
    stall_fence = op == OP_FENCE && !bg_idle;
    stall       = stall_raw || stall_waw || stall_unit || stall_dma || stall_sig || stall_fence;
  end

  // ---------------------------------------------------------------------------------------------
  // execute
  logic   run, pre_trap, fire, retire;
  trap_e  pre_code;
  assign run = state_q == S_RUN;

  always_comb begin
    pre_code = TRAP_OK;
    if (d0.illegal)     pre_code = TRAP_ILLEGAL_INSTRUCTION;
    else if (vmem_oob)  pre_code = TRAP_VMEM_OUT_OF_RANGE;
    else if (psum_oob)  pre_code = TRAP_PSUM_OUT_OF_RANGE;
    else if (hbm_oob || emb_oob) pre_code = TRAP_HBM_OUT_OF_RANGE;
    else if (loop_trap) pre_code = TRAP_LOOP_STACK;
    else if (core_oob)  pre_code = TRAP_NO_SUCH_CORE;
    else if (emb_bad)   pre_code = TRAP_EMB_INDEX_OUT_OF_RANGE;
  end
  // a gather/scatter checks its element addresses only once its vector operands are written
  assign pre_trap = run && pre_code != TRAP_OK && !(is_elem && stall_raw);
  assign fire     = run && !pre_trap && !stall;  // the instruction completes this cycle
  assign retire   = fire;

  // ---------------------------------------------------------------------------------------------
  // dual issue: slot 1 (pc + 1) issues with slot 0 when the two are of different pairable kinds
  // (one VMEM read, one VMEM write, one VPU/XLU/move issue, one scalar write port), independent
  // (a VST then a VLD of the same tile is a dependence through VMEM), neither at the innermost
  // loop's back edge, pc + 1 is not the program's last word (its imem trap stays a single issue),
  // and slot 1 would issue now without a stall or a trap. Otherwise it issues later as slot 0, so
  // traps, trap pcs and the order of effects are those of single issue.
  logic in_v1, in_dw1, in_dr1, dep1, stall1, pair_ok, pair;
  assign in_v1  = own_v && addr1 >= own_v_lo && addr1 <= own_v_hi;
  assign in_dw1 = a1_vw;
  assign in_dr1 = a1_vr;
  // slot 1 reads or rewrites what slot 0 writes (there is no bypass between the two), or loads
  // the tile slot 0 stores (VMEM's read port returns the old data in the cycle of the write)
  assign dep1  = (wr_vd && ((rd_va1 && ra1 == rd) || (rd_vb1 && rb1 == rd) ||
                            (rd_vc1 && rc1 == rd) || (wr_vd1 && rd1 == rd))) ||
                 (s_we && ((rd_sa1 && ra1 == rd) || (rd_sb1 && rb1 == rd))) ||
                 (is_vst && is_vld1 && addr1 == addr);
  assign stall1 = (rd_va1 && unready[ra1]) || (rd_vb1 && unready[rb1]) ||
                  (rd_vc1 && unready[rc1]) || (wr_vd1 && late_waw1) || (d1.vt_wr && in_v1) ||
                  (d1.vt_rd && in_dw1) || (d1.vt_wr && (in_dw1 || in_dr1)) ||
                  (wr_vd1 && (ld_port1 ? wl_q[VLD_LAT].valid : wb_q[lat1].valid)) ||
                  (is_vpu1 && !vpu_ready_i);
  assign pair_ok = k0 != ISSUE_NONE && k1 != ISSUE_NONE && k0 != k1 && pc_s + 34'sd2 < 34'(len_q) &&
                   (depth_q == 0 || (pc_s != top_last && pc_s + 34'sd1 != top_last));
  assign pair    = fire && pair_ok && !dep1 && !stall1 && !illegal1 && !vmem_oob1;

  // channel A (dec_*, iss_*): the non-memory vector instruction; slot 1's when it is the compute
  // op of a pair with a load, store or scalar slot 0 (a decode-time choice, so the VRF's read
  // ports and the VPU's ready do not depend on the pairing decision). The load channel carries the
  // VLD of slot 0, or of slot 1 next to a pairable slot 0 that is no VLD; the store channel the
  // same for a VST (its data register on port s is chosen the same way).
  logic        sel1, ld1, st1;
  logic [31:0] a_sa, a_sb, a_imm;
  assign sel1 = (k0 == ISSUE_LOAD || k0 == ISSUE_STORE || k0 == ISSUE_SCALAR) && k1 == ISSUE_COMPUTE;
  assign ld1  = k1 == ISSUE_LOAD && k0 != ISSUE_LOAD && k0 != ISSUE_NONE;
  assign st1  = k1 == ISSUE_STORE && k0 != ISSUE_STORE && k0 != ISSUE_NONE;
  assign dec_op_o = sel1 ? w1.op : op;
  assign dec_fn_o = sel1 ? w1.fn : fn;
  assign dec_rd_o = sel1 ? rd1 : rd;
  assign dec_ra_o = sel1 ? ra1 : ra;
  assign dec_rb_o = sel1 ? rb1 : rb;
  assign dec_rc_o = sel1 ? rc1 : rc;
  assign dec_rs_o = is_vst ? rb : st1 ? rb1 : d0.rvd ? rd : rb;
  assign dec_dp_o = sel1 ? d1.dp : d0.dp;
  assign a_sa     = sel1 ? sa1 : sa;
  assign a_sb     = sel1 ? sb1 : sb;
  assign a_imm    = sel1 ? imm1 : imm;

  // scalar results
  logic        s_we;
  logic [31:0] s_res;
  logic [LANE_W-1:0] lane;
  assign lane = LANE_W'(32'(immhi) * N + 32'(immlo));
  assign s_we = d0.wsd;
  always_comb begin
    unique case (d0.dp)
      DP_SALU:    s_res = salu(op, fn, sa, sb, imm);
      DP_COUNTER: s_res = op == OP_RDCYCLE ? cycles_q : perf_q[imm[3:0]];
      DP_EXTRACT: s_res = va_tile_i[lane];
      default:    s_res = '0;
    endcase
  end

  // slot 1's scalar result (slot 0 is then a memory or compute op: one scalar write per cycle)
  logic        s_we1;
  logic [31:0] s_res1;
  assign s_we1  = d1.wsd;
  assign s_res1 = salu(w1.op, w1.fn, sa1, sb1, imm1);

  // issue outputs
  assign iss_valid_o  = sel1 ? pair : fire && d0.vec && !is_vld && !is_vst;
  // the scalar operand of channel A: a move's scalar register sa (VSPLAT), an XLU op's sb (a rotate
  // amount), else the immediate (the decode's scalar reads)
  logic a_mov_sa, a_xlu_sb;
  assign a_mov_sa     = sel1 ? (d1.dp == DP_MOV && d1.rsa) : (d0.dp == DP_MOV && d0.rsa);
  assign a_xlu_sb     = sel1 ? (d1.dp == DP_XLU && d1.rsb) : (d0.dp == DP_XLU && d0.rsb);
  assign iss_scalar_o = a_mov_sa ? a_sa : a_xlu_sb ? a_sb : a_imm;
  assign iss_addr_o   = is_dma ? 32'(dvb) : is_span ? 32'(maddr_p) : 32'(addr);
  assign iss_addr2_o  = is_dma ? 32'(dhb) : 32'(maddr_a);
  assign dma_rows_o    = dcfg_rows_q;
  assign dma_hstride_o = dcfg_hs_q;
  assign dma_vstride_o = dcfg_vs_q;
  assign ld_valid_o   = (is_vld && fire) || (ld1 && pair);
  assign ld_addr_o    = is_vld ? 32'(addr) : 32'(addr1);
  assign st_valid_o   = (is_vst && fire) || (st1 && pair);
  assign st_addr_o    = is_vst ? 32'(addr) : 32'(addr1);
  assign wb_valid_o   = wb_q[0].valid;
  assign wb_vd_o      = wb_q[0].vd;
  assign wb_src_o     = wb_q[0].src;
  assign wl_valid_o   = wl_q[0].valid;
  assign wl_vd_o      = wl_q[0].vd;

  // status outputs
  assign running_o    = state_q == S_RUN || state_q == S_DRAIN;
  assign done_o       = state_q == S_DONE;
  assign status_o     = status_q;
  assign pc_o         = (state_q == S_RUN) ? 32'(pc_q) : trap_pc_q;
  assign cycles_o     = cycles_q;
  assign perf_o       = perf_q;
  assign sreg_rdata_o = sreg_q[sreg_raddr_i];

  // ---------------------------------------------------------------------------------------------
  // sequential state
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      for (int i = 0; i < IMEM_WORDS; i++) imem_q[i] <= '0;
    end else if (imem_we_i && state_q == S_IDLE) begin
      imem_q[imem_waddr_i] <= imem_wdata_i;
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      len_q <= '0;
    end else if (imem_we_i && state_q == S_IDLE && {1'b0, imem_waddr_i} >= len_q) begin
      len_q <= {1'b0, imem_waddr_i} + 1'b1;
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      for (int i = 0; i < 16; i++) sreg_q[i] <= '0;
    end else if (state_q == S_IDLE) begin
      if (sreg_we_i && sreg_waddr_i != 4'd0) sreg_q[sreg_waddr_i] <= sreg_wdata_i;
    end else begin
      if (retire && s_we && rd != 4'd0) sreg_q[rd] <= s_res;
      if (pair && s_we1 && rd1 != 4'd0) sreg_q[rd1] <= s_res1;
    end
  end

  // write-back slot tables: slot k is the write at the end of cycle now+k. A pair books at most
  // one write per table (its vector writer is a VLD, which books wl_q, or one compute op).
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      wb_q <= '0;
      wl_q <= '0;
    end else begin
      for (int k = 0; k < SLOTS - 1; k++) wb_q[k] <= wb_q[k+1];
      wb_q[SLOTS-1] <= '0;
      for (int k = 0; k < LSLOTS - 1; k++) wl_q[k] <= wl_q[k+1];
      wl_q[LSLOTS-1] <= '0;
      if (fire && wr_vd && !ld_port) wb_q[lat - 4'd1] <= '{valid: 1'b1, vd: rd, src: src};
      if (pair && wr_vd1 && !ld_port1) wb_q[lat1 - 4'd1] <= '{valid: 1'b1, vd: rd1, src: src1};
      if ((fire && wr_vd && ld_port) || (pair && wr_vd1 && ld_port1))
        wl_q[VLD_LAT - 1] <= '{valid: 1'b1, vd: (wr_vd && ld_port) ? rd : rd1, src: WB_VLD};
    end
  end

  // MXU ownership ranges: the tiles the MMULs in flight still read or write (mxu_own)
  logic signed [33:0] mv_lo, mv_hi, mp_lo, mp_hi;
  assign mv_lo = maddr_a;
  assign mv_hi = maddr_a + t_cnt - 34'sd1;
  assign mp_lo = maddr_p;
  assign mp_hi = maddr_p + t_cnt - 34'sd1;
  mxu_own u_own (
    .clk_i,
    .rst_ni,
    .push_i     (fire && is_mxu && is_span),
    .v_lo_i     (mv_lo),
    .v_hi_i     (mv_hi),
    .p_lo_i     (mp_lo),
    .p_hi_i     (mp_hi),
    .vdone_i    (mxu_vdone_i),
    .pdone_i    (mxu_pdone_i),
    .mxu_idle_i,
    .full_o     (own_full),
    .own_v_o    (own_v),
    .v_lo_o     (own_v_lo),
    .v_hi_o     (own_v_hi),
    .own_p_o    (own_p),
    .p_lo_o     (own_p_lo),
    .p_hi_o     (own_p_hi)
  );

  // the DMA shape: DMA.CFG sets it (and its row spans, so a DMA's range check needs no multiply)
  logic dcfg_we;
  assign dcfg_we = fire && d0.dp == DP_DMACFG;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      dcfg_rows_q  <= 16'd1;
      dcfg_hs_q    <= '0;
      dcfg_vs_q    <= '0;
      dcfg_hspan_q <= '0;
      dcfg_vspan_q <= '0;
    end else if ((state_q == S_IDLE || state_q == S_DONE) && start_i) begin
      dcfg_rows_q  <= 16'd1;
      dcfg_hs_q    <= '0;
      dcfg_vs_q    <= '0;
      dcfg_hspan_q <= '0;
      dcfg_vspan_q <= '0;
    end else if (dcfg_we) begin
      dcfg_rows_q  <= immhi;
      dcfg_hs_q    <= sa;
      dcfg_vs_q    <= immlo;
      dcfg_hspan_q <= 52'($signed({1'b0, immhi}) - 17'sd1) * 52'($signed(sa));
      dcfg_vspan_q <= 52'($signed({1'b0, immhi}) - 17'sd1) * 52'({1'b0, immlo});
    end
  end

  // DMA ownership: an entry per command, pushed when the SXU issues it, popped when the engine
  // reports the oldest command done (commands complete in order)
  logic dma_fire;
  assign dma_fire = fire && is_dma;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      de_valid_q <= '0;
      de_out_q   <= '0;
      de_wr_q    <= '0;
      de_rd_q    <= '0;
      for (int e = 0; e < int'(DT); e++) begin
        de_vlo_q[e] <= '0;
        de_vhi_q[e] <= '0;
        de_hlo_q[e] <= '0;
        de_hhi_q[e] <= '0;
      end
    end else begin
      if (dma_done_i) begin
        de_valid_q[de_rd_q[DTW-1:0]] <= 1'b0;
        de_rd_q <= de_rd_q + 1'b1;
      end
      if (dma_fire) begin
        de_valid_q[de_wr_q[DTW-1:0]] <= 1'b1;
        de_out_q[de_wr_q[DTW-1:0]]   <= dma_out;
        de_vlo_q[de_wr_q[DTW-1:0]]   <= dv_lo;
        de_vhi_q[de_wr_q[DTW-1:0]]   <= dv_hi;
        de_hlo_q[de_wr_q[DTW-1:0]]   <= dh_lo;
        de_hhi_q[de_wr_q[DTW-1:0]]   <= dh_hi;
        de_wr_q <= de_wr_q + 1'b1;
      end
    end
  end
  // signal flags: +1 per arrival, -count per SIG.WAIT; cleared at start
  assign sig_valid_o = fire && is_send;
  assign sig_core_o  = sa[3:0];
  assign sig_flag_o  = immlo[FLAG_W-1:0];
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      for (int f = 0; f < int'(SIG_FLAGS); f++) flag_q[f] <= '0;
    end else if ((state_q == S_IDLE || state_q == S_DONE) && start_i) begin
      for (int f = 0; f < int'(SIG_FLAGS); f++) flag_q[f] <= '0;
    end else begin
      for (int f = 0; f < int'(SIG_FLAGS); f++) begin
        flag_q[f] <= flag_q[f] + 32'(sig_rx_valid_i && sig_rx_flag_i == FLAG_W'(f)) -
                     ((fire && is_wait && wflag == FLAG_W'(f)) ? 32'(immlo) : 32'd0);
      end
    end
  end

  `include "assert.svh"
  // a signal leaves only to an existing core, and a wait consumes only what its flag holds
  `ASSERT(SigToExistingCore, sig_valid_o |-> 32'(sig_core_o) < CORES && sig_ready_i)
  `ASSERT(SigWaitHasCount, fire && is_wait |-> flag_q[wflag] >= 32'(immlo))
  // the engine completes only commands the SXU issued, and none is left once it is idle
  `ASSERT(DmaDoneHasEntry, dma_done_i |-> de_valid_q[de_rd_q[DTW-1:0]])
  `ASSERT(DmaIdleNoEntry, dma_idle_i |-> de_valid_q == '0)
  `ASSERT(DmaTableNoOverflow, dma_fire |-> !de_full)
  // interlocks (what the stall terms above guarantee, stated independently of how they are
  // computed): an issued instruction reads no register whose write is still booked for a later
  // cycle, writes no tile the MXU owns, reads no PSUM tile the MXU writes, and books a free
  // write-back slot; a pair issues only with slot 0, from two different issue classes
  `ASSERT(IssueReadsReadyA, fire && rd_va |-> !unready[ra])
  `ASSERT(IssueReadsReadyB, fire && rd_vb |-> !unready[rb])
  `ASSERT(IssueReadsReadyC, fire && rd_vc |-> !unready[rc])
  `ASSERT(IssueReadsReadyStore, fire && rd_vd |-> !unready[rd])
  `ASSERT(NoWriteToMxuVmemTile, fire && d0.vt_wr |-> !in_v)
  `ASSERT(NoScatterToMxuVmemTile, fire && d0.ve_wr |-> !in_e)
  `ASSERT(NoAccessToMxuPsumTile, fire && (d0.pt_wr || d0.pt_rd) |-> !in_p)
  `ASSERT(WriteBackSlotFree, fire && wr_vd && !ld_port |-> !wb_q[lat].valid)
  `ASSERT(LoadSlotFree, fire && wr_vd && ld_port |-> !wl_q[VLD_LAT].valid)
  `ASSERT(PairWithSlot0, pair |-> fire)
  `ASSERT(PairOfTwoClasses, pair |-> k0 != k1 && k0 != ISSUE_NONE && k1 != ISSUE_NONE)
  `ASSERT(LoopStackBounded, depth_q <= 3'(LOOP_DEPTH))
  `ASSERT(TrapStopsIssue, pre_trap |-> !fire)

  // control: state, pc, loop stack, status, counters
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      state_q   <= S_IDLE;
      pc_q      <= '0;
      status_q  <= TRAP_OK;
      trap_pc_q <= '0;
      cycles_q  <= '0;
      perf_q    <= '0;
      depth_q   <= '0;
      for (int i = 0; i < LOOP_DEPTH; i++) begin
        lp_start_q[i] <= '0;
        lp_last_q[i]  <= '0;
        lp_rem_q[i]   <= '0;
      end
    end else begin
      unique case (state_q)
        S_IDLE, S_DONE: if (start_i) begin
          state_q   <= S_RUN;
          pc_q      <= '0;
          status_q  <= TRAP_OK;
          trap_pc_q <= '0;
          cycles_q  <= '0;
          perf_q    <= '0;
          depth_q   <= '0;
          // an empty program: its first pc is already outside it
          if (len_q == '0) begin
            state_q  <= S_DRAIN;
            status_q <= TRAP_IMEM_OUT_OF_RANGE;
          end
        end
        S_RUN: begin
          cycles_q <= cycles_q + 32'd1;
          if (mxu_busy_i) perf_q[PERF_MXU_BUSY] <= perf_q[PERF_MXU_BUSY] + 32'd1;
          if (!dma_idle_i) perf_q[PERF_DMA_BUSY] <= perf_q[PERF_DMA_BUSY] + 32'd1;
          if (dma_tile_i) perf_q[PERF_DMA_TILES] <= perf_q[PERF_DMA_TILES] + 32'd1;
          if (pre_trap) begin
            state_q   <= S_DRAIN;
            status_q  <= pre_code;
            trap_pc_q <= 32'(pc_q);
          end else if (stall) begin
            if (stall_raw) perf_q[PERF_STALL_RAW] <= perf_q[PERF_STALL_RAW] + 32'd1;
            else if (stall_waw) perf_q[PERF_STALL_WAW] <= perf_q[PERF_STALL_WAW] + 32'd1;
            else if (stall_unit) perf_q[PERF_STALL_UNIT] <= perf_q[PERF_STALL_UNIT] + 32'd1;
            else if (stall_dma) perf_q[PERF_STALL_DMA] <= perf_q[PERF_STALL_DMA] + 32'd1;
            else if (stall_sig) perf_q[PERF_STALL_SIG] <= perf_q[PERF_STALL_SIG] + 32'd1;
            else perf_q[PERF_STALL_FENCE] <= perf_q[PERF_STALL_FENCE] + 32'd1;
          end else begin
            // a pair counts both instructions
            perf_q[PERF_RETIRED] <= perf_q[PERF_RETIRED] + (pair ? 32'd2 : 32'd1);
            perf_q[PERF_VPU_OPS] <= perf_q[PERF_VPU_OPS] + 32'(d0.cnt_vpu) + 32'(pair && d1.cnt_vpu);
            perf_q[PERF_XLU_OPS] <= perf_q[PERF_XLU_OPS] + 32'(d0.cnt_xlu) + 32'(pair && d1.cnt_xlu);
            perf_q[PERF_MEM_OPS] <= perf_q[PERF_MEM_OPS] + 32'(d0.cnt_mem) + 32'(pair && d1.cnt_mem);
            if (op == OP_HALT) begin
              // done at once when nothing lands after this cycle (this cycle's writes complete at its end)
              state_q <= (mxu_idle_i && unready == '0 && dma_idle_i && !emb_busy_i) ? S_DONE : S_DRAIN;
            end else if (imem_oob) begin
              state_q   <= S_DRAIN;
              status_q  <= TRAP_IMEM_OUT_OF_RANGE;
              trap_pc_q <= 32'(pc_q);
            end else begin
              pc_q <= IMEM_AW'(npc) + IMEM_AW'(pair);  // a pair's slot 0 falls through
            end
            // loop stack
            if (push) begin
              lp_start_q[depth_q[1:0]] <= pc_q + 1'b1;
              lp_last_q[depth_q[1:0]]  <= loop_last;
              lp_rem_q[depth_q[1:0]]   <= loop_count;
              depth_q                  <= depth_q + 3'd1;
            end else if (pop) begin
              depth_q <= depth_q - 3'd1;
            end else if (dec) begin
              lp_rem_q[top] <= lp_rem_q[top] - 32'd1;
            end
          end
        end
        S_DRAIN: begin
          cycles_q <= cycles_q + 32'd1;
          if (mxu_busy_i) perf_q[PERF_MXU_BUSY] <= perf_q[PERF_MXU_BUSY] + 32'd1;
          if (!dma_idle_i) perf_q[PERF_DMA_BUSY] <= perf_q[PERF_DMA_BUSY] + 32'd1;
          if (dma_tile_i) perf_q[PERF_DMA_TILES] <= perf_q[PERF_DMA_TILES] + 32'd1;
          if (bg_idle) state_q <= S_DONE;
        end
        default: ;
      endcase
    end
  end

  // ---------------------------------------------------------------------------------------------
  // --- SparseCore (doc/sparsecore.md) ---
  // EMB.CFG sets the table (0, 0 rows, width 1, bag 1 at start). An EMB.BAG/EMB.FBAG checks its HBM
  // boxes here (the table, the index list, the destination; the destination overlapping neither),
  // waits until the DMA engine and the SparseCore are idle, then sends the lookup (emb_valid_o,
  // one cycle) and holds its issue until the SparseCore's index check answers: it retires, or
  // traps with emb_index_out_of_range at its pc. A DMA waits while the SparseCore is busy; so do
  // EMB.WAIT, FENCE, HALT and a trap's drain. So every program sees a lookup complete at issue.
  logic               is_emb, emb_cfg_we, emb_sent_q, emb_oob, emb_bad, emb_stall_unit, emb_stall_dma;
  logic signed [33:0] emb_tb_q;
  logic [31:0]        emb_rows_q;
  logic [4:0]         emb_w_q;
  logic [15:0]        emb_bag_q;
  logic signed [51:0] emb_tspan_q, e_tlo, e_thi, e_ilo, e_ihi, e_dlo, e_dhi;
  assign is_emb     = d0.dp == DP_EMB;
  assign emb_cfg_we = fire && d0.dp == DP_EMBCFG;
  assign e_tlo = 52'(emb_tb_q);
  assign e_thi = e_tlo + emb_tspan_q;
  assign e_ilo = 52'(maddr_a);
  assign e_ihi = e_ilo + 52'((32'(fn) * 32'(emb_bag_q) + N*N - 1) >> LANE_W);
  assign e_dlo = 52'(maddr_p);
  assign e_dhi = e_dlo + 52'(32'(fn) * 32'(emb_w_q));
  assign emb_oob = is_emb && (e_tlo < 0 || e_thi > HT52 || e_ilo < 0 || e_ihi > HT52 || e_dlo < 0 || e_dhi > HT52 ||
                              (e_thi != e_tlo && e_tlo < e_dhi && e_dlo < e_thi) || (e_ilo < e_dhi && e_dlo < e_ihi));
  assign emb_bad        = is_emb && emb_sent_q && emb_chk_valid_i && emb_chk_bad_i;
  // a lookup not yet sent waits for the DMA engine (counted as stall_dma) or the SparseCore (unit)
  assign emb_stall_unit = is_emb && !(emb_sent_q && emb_chk_valid_i) && (emb_sent_q || dma_idle_i);
  assign emb_stall_dma  = (is_emb && !emb_sent_q && !dma_idle_i) || (is_dma && emb_busy_i) || (op == OP_EMBWAIT && emb_busy_i);
  assign emb_valid_o    = run && is_emb && !emb_sent_q && !emb_busy_i && dma_idle_i && pre_code == TRAP_OK;
  assign emb_fp_o       = op == OP_EMBBAGF;
  assign emb_tbase_o    = 32'(emb_tb_q);
  assign emb_rows_o     = emb_rows_q;
  assign emb_width_o    = emb_w_q;
  assign emb_bag_o      = emb_bag_q;
  assign emb_bags_o     = fn;
  assign emb_idx_o      = 32'(maddr_a);
  assign emb_dst_o      = 32'(maddr_p);
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      emb_sent_q  <= 1'b0;
      emb_tb_q    <= '0;
      emb_rows_q  <= '0;
      emb_w_q     <= 5'd1;
      emb_bag_q   <= 16'd1;
      emb_tspan_q <= '0;
    end else begin
      if (emb_valid_o) emb_sent_q <= 1'b1;
      else if (emb_chk_valid_i) emb_sent_q <= 1'b0;
      if ((state_q == S_IDLE || state_q == S_DONE) && start_i) begin
        emb_tb_q    <= '0;
        emb_rows_q  <= '0;
        emb_w_q     <= 5'd1;
        emb_bag_q   <= 16'd1;
        emb_tspan_q <= '0;
      end else if (emb_cfg_we) begin
        emb_tb_q    <= 34'($signed(sa));
        emb_rows_q  <= sb;
        emb_w_q     <= 5'(immhi);
        emb_bag_q   <= immlo;
        emb_tspan_q <= 52'({20'd0, sb}) * 52'(immhi[4:0]);
      end
    end
  end
  `ASSERT(EmbCheckAnswersSent, emb_chk_valid_i |-> emb_sent_q)
  `ASSERT(EmbSentHoldsIssue, emb_sent_q |-> is_emb && state_q == S_RUN)
  `ASSERT(EmbIssueChecked, fire && is_emb |-> emb_sent_q && emb_chk_valid_i && !emb_chk_bad_i)
  `ASSERT(EmbNotWithDma, emb_valid_o |-> dma_idle_i && de_valid_q == '0)

  logic unused;
  // slot 1 pairs only as a load, store, compute or scalar op, which use none of these
  assign unused = ^{back_edge, src, d1.vec, d1.rvd, d1.pt_rd, d1.pt_wr, d1.ve_rd, d1.ve_wr,
                    d1.mp_rd, d1.mp_wr, d1.mv_rd, d1.mv_wr, d0.mv_rd, d0.mv_wr, d0.dv_rd, d0.dv_wr, d0.ha_rd, d0.hb_rd, d0.hb_wr,
                    d1.dv_rd, d1.dv_wr, d1.ha_rd, d1.ha_wr, d1.hb_rd, d1.hb_wr,
                    d0.ed_rd, d0.ed_wr, d0.ei_rd, d0.ei_wr, d1.ed_rd, d1.ed_wr, d1.ei_rd, d1.ei_wr};

endmodule
