#include <cctype>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/stubs/logging.h>
#include <gtest/gtest.h>

#include "absl/status/status.h"
#include "compiler/ir/builder.h"
#include "compiler/ir/dtype.h"
#include "compiler/ir/proto_convert.h"

namespace kiln::ir {
namespace {

namespace pb = ::kiln::v1;
using ::testing::HasSubstr;

// --- Test programs -----------------------------------------------------------

Buffer MakeBuffer(std::string name, DType dtype, Scope scope, std::vector<Expr> shape,
                  Loc loc = {}) {
  Buffer b;
  b.name = std::move(name);
  b.dtype = dtype;
  b.scope = scope;
  b.shape = std::move(shape);
  b.loc = loc;
  return b;
}

Stmt MakeStmt(StmtKind kind, Loc loc = {}) {
  Stmt s;
  s.kind = kind;
  s.loc = loc;
  return s;
}

Stmt Alloc(Buffer b, Loc loc = {}) {
  Stmt s = MakeStmt(StmtKind::kAlloc, loc);
  s.buffer = std::move(b);
  return s;
}

Stmt Store(std::string buffer, std::vector<Expr> indices, Expr value, Loc loc = {}) {
  Stmt s = MakeStmt(StmtKind::kStore, loc);
  s.name = std::move(buffer);
  s.indices = std::move(indices);
  s.has_value = true;
  s.value = std::move(value);
  return s;
}

Stmt For(ForKind kind, std::vector<std::string> vars, std::vector<Expr> extents,
         std::vector<Stmt> body, Loc loc = {}) {
  Stmt s = MakeStmt(StmtKind::kFor, loc);
  s.for_kind = kind;
  s.loop_vars = std::move(vars);
  s.extents = std::move(extents);
  s.body = std::move(body);
  return s;
}

// Covers every StmtKind, ExprKind, DType, Scope and enum value, and sets
// every proto field to a non-default value somewhere (EveryFieldIsWritten
// checks that). Its layout is relied on by the rejection cases below:
//   kernel.body[0..4]  allocs (shared, shared.dyn, fragment, local, var)
//   kernel.body[5]     copy            kernel.body[6]  gemm
//   kernel.body[7]     fill            kernel.body[8]  reduce
//   kernel.body[9,10]  atomics         kernel.body[11] pipelined for
//     .body[0]           parallel for (i, j) .body[0] store (value loc 21:20)
//   kernel.body[12]    if/else         kernel.body[13] annotate_layout
//   kernel.body[14]    use_swizzle     kernel.body[15] serial for of stores
Program Everything() {
  Program p;
  p.name = "everything";
  p.source_name = "all.py";
  p.symbols.push_back(Symbol{"M", DType::kInt32, Loc{1, 1}});
  p.symbols.push_back(Symbol{"N", DType::kInt64, Loc{0, 7}, "in"}); // column only
  int col = 1;
  for (DType d : AllDTypes()) {
    Param param;
    param.buffer = MakeBuffer(std::string("p_") + std::string(DTypeName(d)), d, Scope::kGlobal,
                              {VarRef("M"), IntImm(64)}, Loc{2, col++});
    p.params.push_back(param);
  }
  p.params.back().is_output = true;
  // A T.Layout on the first tensor: element (i, j) at (j, i).
  p.params[0].buffer.index_layout =
      IndexLayout{{"li", "lj"}, {VarRef("lj"), VarRef("li")}, Loc{2, 40}};
  Param alpha;
  alpha.buffer = MakeBuffer("alpha", DType::kFloat32, Scope::kGlobal, {});
  alpha.is_scalar = true;
  alpha.user_name = "max"; // the user's name, a keyword of the IR text
  p.params.push_back(alpha);

  Kernel& k = p.kernel;
  k.loc = Loc{3, 5};
  k.grid = {Binary(BinOp::kFloorDiv, VarRef("M"), IntImm(32)), IntImm(2), IntImm(1)};
  k.block_vars = {"bx", "by", "bz"};
  k.threads = {128, 2, 1};

  Buffer shared =
      MakeBuffer("s_shared", DType::kFloat16, Scope::kShared, {IntImm(32), IntImm(64)}, Loc{4, 3});
  Buffer dyn = MakeBuffer("s_dyn", DType::kFloat16, Scope::kSharedDyn, {IntImm(64), IntImm(32)});
  Buffer frag = MakeBuffer("frag", DType::kFloat32, Scope::kFragment, {IntImm(32), IntImm(32)});
  Buffer local = MakeBuffer("l_buf", DType::kFloat32, Scope::kLocal, {IntImm(32)});
  Buffer var = MakeBuffer("v", DType::kInt32, Scope::kVar, {IntImm(1)});
  var.has_init = true;
  var.init = IntImm(7, DType::kInt32, Loc{8, 20});
  k.body.push_back(Alloc(shared, Loc{4, 3}));
  k.body.push_back(Alloc(dyn));
  k.body.push_back(Alloc(frag));
  k.body.push_back(Alloc(local));
  k.body.push_back(Alloc(var, Loc{8, 3}));

  Stmt copy = MakeStmt(StmtKind::kCopy, Loc{10, 3});
  Region src;
  src.buffer = "p_float16";
  src.loc = Loc{10, 10};
  src.ranges.push_back(
      Range{Binary(BinOp::kMul, VarRef("bx"), IntImm(32), Loc{10, 12}), IntImm(32)});
  src.ranges.push_back(Range{IntImm(0), IntImm(64)});
  copy.regions = {src, WholeRegion(shared)};
  k.body.push_back(copy);

  Stmt gemm = MakeStmt(StmtKind::kGemm, Loc{11, 3});
  gemm.regions = {WholeRegion(shared), WholeRegion(dyn), WholeRegion(frag)};
  gemm.transpose_a = true;
  gemm.transpose_b = true;
  gemm.clear_accum = true;
  gemm.k_pack = 2;
  gemm.policy = GemmPolicy::kFullRow;
  gemm.wg_wait = kGemmNoWait;
  k.body.push_back(gemm);

  Stmt fill = MakeStmt(StmtKind::kFill);
  fill.regions = {WholeRegion(frag)};
  fill.has_value = true;
  fill.value = FloatImm(0.5);
  k.body.push_back(fill);

  Stmt reduce = MakeStmt(StmtKind::kReduce);
  reduce.regions = {WholeRegion(frag), WholeRegion(local)};
  reduce.reduce_kind = ReduceKind::kAbsMax;
  reduce.dim = 1;
  reduce.clear = false;
  k.body.push_back(reduce);

  Stmt atomic_value = MakeStmt(StmtKind::kAtomic);
  atomic_value.atomic_op = AtomicOp::kMax;
  atomic_value.regions = {WholeRegion(local)};
  atomic_value.has_value = true;
  atomic_value.value = FloatImm(-std::numeric_limits<double>::infinity());
  k.body.push_back(atomic_value);
  Stmt atomic_region = MakeStmt(StmtKind::kAtomic);
  atomic_region.atomic_op = AtomicOp::kMin;
  atomic_region.regions = {WholeRegion(local), WholeRegion(local)};
  k.body.push_back(atomic_region);

  Expr elem = Load("s_shared", DType::kFloat16, {VarRef("i"), VarRef("j")});
  Stmt inner =
      Store("s_shared", {VarRef("i"), VarRef("j")},
            Binary(BinOp::kMul, elem, FloatImm(2.0, DType::kFloat16), Loc{21, 20}), Loc{21, 7});
  Stmt parallel = For(ForKind::kParallel, {"i", "j"}, {IntImm(32), IntImm(64)}, {inner});
  Stmt pipelined =
      For(ForKind::kPipelined, {"ko"},
          {Binary(BinOp::kFloorDiv, VarRef("N", DType::kInt64), IntImm(64, DType::kInt64))},
          {parallel}, Loc{20, 3});
  pipelined.num_stages = 3;
  pipelined.order = {0, 1};
  pipelined.stage = {0, 1};
  k.body.push_back(pipelined);

  Stmt branch = MakeStmt(StmtKind::kIf, Loc{30, 3});
  branch.cond = Binary(BinOp::kLt, ThreadIdx(0), IntImm(64));
  branch.body = {Store("v", {IntImm(0)}, ThreadIdx(1))};
  // The remaining values of the statement enums.
  for (ReduceKind kind :
       {ReduceKind::kSum, ReduceKind::kMax, ReduceKind::kMin, ReduceKind::kAbsSum}) {
    Stmt r = reduce;
    r.reduce_kind = kind;
    branch.body.push_back(r);
  }
  for (GemmPolicy policy : {GemmPolicy::kSquare, GemmPolicy::kFullCol}) {
    Stmt g = gemm;
    g.policy = policy;
    branch.body.push_back(g);
  }
  Stmt atomic_add = atomic_value;
  atomic_add.atomic_op = AtomicOp::kAdd;
  branch.body.push_back(atomic_add);
  branch.else_body = {
      For(ForKind::kSerial, {"a"}, {IntImm(2)}, {Store("v", {IntImm(0)}, ThreadIdx(2))}),
      For(ForKind::kUnroll, {"b"}, {IntImm(4)}, {}),
      For(ForKind::kVectorized, {"c"}, {IntImm(8)}, {}),
  };
  k.body.push_back(branch);

  Stmt layout = MakeStmt(StmtKind::kAnnotateLayout);
  layout.name = "s_shared";
  layout.layout = "swizzled";
  k.body.push_back(layout);

  Stmt swizzle = MakeStmt(StmtKind::kUseSwizzle);
  swizzle.panel_size = 8;
  swizzle.swizzle_order = "col";
  swizzle.enable = false;
  k.body.push_back(swizzle);

  // One store per operator, intrinsic and literal form.
  std::vector<Stmt> stores;
  auto store = [&](Expr value) { stores.push_back(Store("l_buf", {VarRef("e")}, value)); };
  for (int op = 0; op <= static_cast<int>(BinOp::kShr); ++op) {
    store(Binary(static_cast<BinOp>(op), VarRef("e"), IntImm(3)));
  }
  for (int op = 0; op <= static_cast<int>(UnOp::kBitNot); ++op) {
    store(Unary(static_cast<UnOp>(op), VarRef("e")));
  }
  for (int fn = 0; fn <= static_cast<int>(Intrinsic::kSigmoid); ++fn) {
    auto f = static_cast<Intrinsic>(fn);
    std::vector<Expr> args = {FloatImm(1.5)};
    if (f == Intrinsic::kPow) args.push_back(FloatImm(2.0));
    store(Call(f, args));
  }
  for (DType d : AllDTypes()) store(Cast(d, VarRef("e")));
  store(Select(BoolImm(true), FloatImm(1.0), FloatImm(2.0)));
  store(IntImm(std::numeric_limits<int64_t>::min(), DType::kInt64));
  store(FloatImm(std::numeric_limits<double>::infinity(), DType::kFloat64));
  store(FloatImm(-0.0));
  store(FloatImm(std::numeric_limits<double>::denorm_min(), DType::kFloat64));
  // reinterpret, the one intrinsic whose dtype is not its argument's (last,
  // so that the indices the error cases below use stay put).
  Expr bits = Call(Intrinsic::kReinterpret, {FloatImm(1.5)});
  bits.dtype = DType::kInt32;
  store(bits);
  k.body.push_back(For(ForKind::kSerial, {"e"}, {IntImm(4)}, stores));

  // TileLang's Hopper synchronization: a barrier buffer (its arrival counts
  // are the alloc's indices), a ws region, tma_copy and the barrier calls.
  Buffer mbar = MakeBuffer("mbar", DType::kUInt64, Scope::kBarrier, {IntImm(2)});
  Stmt mbar_alloc = Alloc(mbar);
  mbar_alloc.indices = {IntImm(128), IntImm(1)};
  k.body.push_back(mbar_alloc);
  Region bar{"mbar", {Range{IntImm(1), IntImm(1)}}, Loc{40, 30}};
  Stmt ws = MakeStmt(StmtKind::kWarpSpecialize, Loc{40, 3});
  ws.indices = {IntImm(1)};
  Stmt tma = MakeStmt(StmtKind::kTmaCopy);
  tma.regions = {src, WholeRegion(shared), bar};
  Stmt expect = MakeStmt(StmtKind::kBarrierExpectTx);
  expect.regions = {bar};
  expect.has_value = true;
  expect.value = IntImm(4096);
  Stmt arrive = MakeStmt(StmtKind::kBarrierArrive);
  arrive.regions = {bar};
  Stmt wait = MakeStmt(StmtKind::kBarrierWait);
  wait.regions = {bar};
  wait.has_value = true;
  wait.value = Binary(BinOp::kFloorMod, VarRef("bx"), IntImm(2));
  // A run-time check with quotes and backslashes in its message.
  Stmt check = MakeStmt(StmtKind::kAssert, Loc{41, 3});
  check.cond = Binary(BinOp::kLt, VarRef("bx"), IntImm(64));
  check.message = "assert at line 41 failed: \"bx\" \\ 64";
  ws.body = {expect, tma, arrive, wait, check};
  k.body.push_back(ws);
  Stmt wait_wgmma = MakeStmt(StmtKind::kWaitWgmma, Loc{42, 3});
  wait_wgmma.has_value = true;
  wait_wgmma.value = IntImm(1);
  k.body.push_back(wait_wgmma);

  // A workspace (T.alloc_global) and a second kernel that writes it.
  p.workspaces.push_back(
      MakeBuffer("ws", DType::kFloat32, Scope::kGlobal, {VarRef("M")}, Loc{2, 60}));
  Kernel& k2 = p.next_kernels.emplace_back();
  k2.loc = Loc{50, 5};
  k2.grid = {VarRef("M")};
  k2.block_vars = {"cx"};
  k2.threads = {32};
  k2.body.push_back(Store("ws", {VarRef("cx")}, FloatImm(1.0, DType::kFloat32), Loc{51, 7}));

  p.attrs = {{"fast_math", "true"}, {"tl.disable_tma", "1"}};
  return p;
}

pb::Program EverythingProto() {
  pb::Program proto;
  ToProto(Everything(), &proto);
  return proto;
}

// Serialized deterministically, so that two messages compare as bytes (NaN
// included, which operator== on the IR does not equate with itself).
std::string Bytes(const pb::Program& proto) {
  std::string out;
  google::protobuf::io::StringOutputStream stream(&out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  proto.SerializeToCodedStream(&coded);
  coded.Trim();
  return out;
}

// --- Round trip --------------------------------------------------------------

TEST(ProtoConvertTest, ToProtoSetsIrVersion) { EXPECT_EQ(EverythingProto().ir_version(), 1u); }

TEST(ProtoConvertTest, RoundTripIsExact) {
  Program p = Everything();
  pb::Program proto;
  ToProto(p, &proto);
  absl::StatusOr<Program> back = FromProto(proto);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, p);
}

TEST(ProtoConvertTest, RoundTripThroughBytes) {
  Program p = Everything();
  pb::Program proto;
  ToProto(p, &proto);
  pb::Program parsed;
  ASSERT_TRUE(parsed.ParseFromString(proto.SerializeAsString()));
  absl::StatusOr<Program> back = FromProto(parsed);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, p);
}

TEST(ProtoConvertTest, ToProtoClearsOutput) {
  pb::Program proto;
  proto.add_symbols()->set_name("stale");
  (*proto.mutable_attrs())["stale"] = "1";
  Program p = Everything();
  ToProto(p, &proto);
  EXPECT_EQ(proto.symbols_size(), 2);
  EXPECT_EQ(proto.attrs().count("stale"), 0u);
}

TEST(ProtoConvertTest, NanLiteralSurvives) {
  Program p = Everything();
  p.kernel.body[7].value = FloatImm(std::numeric_limits<double>::quiet_NaN());
  pb::Program proto;
  ToProto(p, &proto);
  absl::StatusOr<Program> back = FromProto(proto);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(std::isnan(back->kernel.body[7].value.fval));
}

TEST(ProtoConvertTest, PresenceFollowsHasInitAndHasValue) {
  pb::Program proto = EverythingProto();
  const pb::Kernel& k = proto.kernel();
  EXPECT_TRUE(k.body(4).buffer().has_init());  // var with init
  EXPECT_FALSE(k.body(0).buffer().has_init()); // shared, no init
  EXPECT_TRUE(k.body(7).has_value());          // fill
  EXPECT_TRUE(k.body(9).has_value());          // atomic with a value
  EXPECT_FALSE(k.body(10).has_value());        // atomic with a source region
  EXPECT_FALSE(k.body(5).has_value());         // copy
  EXPECT_FALSE(k.body(5).has_buffer());        // copy has no buffer
  EXPECT_FALSE(k.body(5).has_cond());          // nor a condition
  EXPECT_FALSE(k.body(1).has_loc());           // unknown location is not written

  // A var buffer whose init is the default expression still round-trips.
  Program p = Everything();
  p.kernel.body[4].buffer.init = Expr{};
  ToProto(p, &proto);
  EXPECT_TRUE(proto.kernel().body(4).buffer().has_init());
  absl::StatusOr<Program> back = FromProto(proto);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, p);
}

// Fields and enum values that a kind ignores are written only when they
// differ from the IR default, and read back exactly.
TEST(ProtoConvertTest, FieldsIgnoredByTheKindRoundTrip) {
  Program p = Everything();
  Stmt& copy = p.kernel.body[5];
  copy.policy = GemmPolicy::kFullCol;
  copy.reduce_kind = ReduceKind::kMin;
  copy.atomic_op = AtomicOp::kMin;
  copy.for_kind = ForKind::kVectorized;
  copy.cond = BoolImm(true);
  copy.buffer = MakeBuffer("", DType::kInt8, Scope::kLocal, {});
  copy.swizzle_order = "";
  Expr& lit = p.kernel.grid[1];
  lit.bop = BinOp::kShl;
  lit.uop = UnOp::kBitNot;
  lit.fn = Intrinsic::kCos;
  pb::Program proto;
  ToProto(p, &proto);
  absl::StatusOr<Program> back = FromProto(proto);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, p);

  // ...and a hand-written client may leave them unspecified.
  Program q = Everything();
  ToProto(q, &proto);
  EXPECT_EQ(proto.kernel().body(5).policy(), pb::GEMM_POLICY_UNSPECIFIED);
  EXPECT_EQ(proto.kernel().grid(1).bin_op(), pb::BIN_OP_UNSPECIFIED);
  back = FromProto(proto);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, q);
}

// The wire names follow the IR's canonical names, so a table entry that
// pairs the wrong values shows up here.
TEST(ProtoConvertTest, DTypeAndScopeWireNamesMatchIrNames) {
  auto upper = [](std::string_view name) {
    std::string out(name);
    for (char& c : out) c = c == '.' ? '_' : static_cast<char>(std::toupper(c));
    return out;
  };
  for (DType d : AllDTypes()) {
    Program p = Everything();
    p.symbols[0].dtype = d;
    pb::Program proto;
    ToProto(p, &proto);
    EXPECT_EQ(pb::DType_Name(proto.symbols(0).dtype()), "DTYPE_" + upper(DTypeName(d)));
  }
  for (int i = 0; i <= static_cast<int>(Scope::kBarrier); ++i) {
    Program p = Everything();
    p.params[0].buffer.scope = static_cast<Scope>(i);
    pb::Program proto;
    ToProto(p, &proto);
    EXPECT_EQ(pb::Scope_Name(proto.params(0).buffer().scope()),
              "SCOPE_" + upper(ScopeName(static_cast<Scope>(i))));
  }
}

// Walks a message, recording each field that is set and each enum value seen.
void Walk(const google::protobuf::Message& m, std::set<std::string>* fields,
          std::set<std::pair<std::string, int>>* enums) {
  const google::protobuf::Reflection* r = m.GetReflection();
  std::vector<const google::protobuf::FieldDescriptor*> set;
  r->ListFields(m, &set);
  for (const google::protobuf::FieldDescriptor* f : set) {
    fields->insert(f->full_name());
    int n = f->is_repeated() ? r->FieldSize(m, f) : 1;
    for (int i = 0; i < n; ++i) {
      if (f->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE) {
        Walk(f->is_repeated() ? r->GetRepeatedMessage(m, f, i) : r->GetMessage(m, f), fields,
             enums);
      } else if (f->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_ENUM) {
        int v = f->is_repeated() ? r->GetRepeatedEnumValue(m, f, i) : r->GetEnumValue(m, f);
        enums->insert({f->enum_type()->full_name(), v});
      }
    }
  }
}

void AllFields(const google::protobuf::Descriptor* d, std::set<const void*>* seen,
               std::set<std::string>* fields, std::set<std::pair<std::string, int>>* enums) {
  if (!seen->insert(d).second) return;
  for (int i = 0; i < d->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* f = d->field(i);
    fields->insert(f->full_name());
    if (f->message_type() != nullptr) AllFields(f->message_type(), seen, fields, enums);
    if (const google::protobuf::EnumDescriptor* e = f->enum_type()) {
      for (int v = 0; v < e->value_count(); ++v) {
        if (e->value(v)->number() != 0) enums->insert({e->full_name(), e->value(v)->number()});
      }
    }
  }
}

// If a field or enum value is added to program.proto, this fails until the
// converter (and Everything()) handles it.
TEST(ProtoConvertTest, EveryFieldAndEnumValueIsWritten) {
  std::set<std::string> written, all;
  std::set<std::pair<std::string, int>> seen_enums, all_enums;
  pb::Program proto = EverythingProto();
  Walk(proto, &written, &seen_enums);
  std::set<const void*> visited;
  AllFields(pb::Program::descriptor(), &visited, &all, &all_enums);
  for (const std::string& f : all) EXPECT_TRUE(written.count(f)) << "never written: " << f;
  for (const auto& [type, value] : all_enums) {
    EXPECT_TRUE(seen_enums.count({type, value})) << "never written: " << type << " " << value;
  }
  // Every value written was accepted back (RoundTripIsExact), so every wire
  // value has an IR counterpart.
  ASSERT_TRUE(FromProto(proto).ok());
}

// --- Thread IR ---------------------------------------------------------------

TEST(ProtoConvertTest, ThreadIrCannotBeSerialized) {
  struct Case {
    const char* name;
    std::function<void(Program*)> add;
    std::string want; // a substring of the message
  };
  const std::vector<Case> cases = {
      {"call statement",
       [](Program* p) {
         p->kernel.body.push_back(CallStmt("sync_threads", {}, Loc{40, 5}));
       },
       "all.py:40:5: thread-level IR (call sync_threads) cannot be serialized; the wire carries "
       "tile IR only, so convert the program before lowering"},
      {"call nested in a loop",
       [](Program* p) {
         p->kernel.body.push_back(For(ForKind::kSerial, {"w"}, {IntImm(2)},
                                      {CallStmt("cp_async_wait", {IntImm(0)}, Loc{41, 7})},
                                      Loc{40, 5}));
       },
       "all.py:41:7: thread-level IR (call cp_async_wait) cannot be serialized"},
      {"address outside a call",
       [](Program* p) {
         p->kernel.body.push_back(Store("l_buf", {IntImm(0)},
                                        Address("l_buf", DType::kFloat32, IntImm(1), Loc{42, 20}),
                                        Loc{42, 5}));
       },
       "all.py:42:20: thread-level IR (address &l_buf[...]) cannot be serialized"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Program p = Everything();
    c.add(&p);
    absl::StatusOr<pb::Program> proto = ToProto(p);
    ASSERT_FALSE(proto.ok());
    EXPECT_EQ(proto.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(proto.status().message()), HasSubstr(c.want));
    // The unchecked form never writes half a program.
    pb::Program out = EverythingProto();
    ToProto(p, &out);
    EXPECT_EQ(out.ByteSizeLong(), 0u) << "the output is left cleared";
    EXPECT_FALSE(FromProto(out).ok());
  }
}

TEST(ProtoConvertTest, CheckedFormEqualsUncheckedFormForTileIr) {
  absl::StatusOr<pb::Program> proto = ToProto(Everything());
  ASSERT_TRUE(proto.ok()) << proto.status();
  EXPECT_EQ(Bytes(*proto), Bytes(EverythingProto()));
}

// --- Rejections --------------------------------------------------------------

struct RejectCase {
  const char* name;
  std::function<void(pb::Program*)> mutate;
  std::string want; // a substring of the error message
};

pb::Stmt* Body(pb::Program* p, int i) { return p->mutable_kernel()->mutable_body(i); }
pb::Stmt* InnerStore(pb::Program* p) { // kernel.body[11].body[0].body[0]
  return Body(p, 11)->mutable_body(0)->mutable_body(0);
}

std::vector<RejectCase> RejectCases() {
  return {
      {"ir_version 0", [](pb::Program* p) { p->set_ir_version(0); },
       "all.py: ir_version: unsupported ir_version 0; this server supports ir_version 1"},
      {"ir_version 2", [](pb::Program* p) { p->set_ir_version(2); },
       "unsupported ir_version 2; this server supports ir_version 1"},
      {"empty program name", [](pb::Program* p) { p->set_name(""); },
       "all.py: name: missing program name"},
      {"bad program name", [](pb::Program* p) { p->set_name("1st"); },
       "name: invalid program name \"1st\" (expected [A-Za-z_][A-Za-z0-9_]*)"},
      {"name with control characters escaped", [](pb::Program* p) { p->set_name("a\nb"); },
       "invalid program name \"a\\nb\""},
      {"long name shortened", [](pb::Program* p) { p->set_name(std::string(100, '-')); },
       "invalid program name \"" + std::string(64, '-') + "\"..."},
      {"name too long", [](pb::Program* p) { p->set_name(std::string(257, 'a')); },
       "name: program name \"" + std::string(64, 'a') + "\"... is longer than 256 characters"},
      {"symbol dtype unspecified",
       [](pb::Program* p) { p->mutable_symbols(0)->set_dtype(pb::DTYPE_UNSPECIFIED); },
       "all.py:1:1: symbols[0].dtype: DTYPE_UNSPECIFIED (0) is not allowed; a DType value is "
       "required"},
      {"symbol bad name", [](pb::Program* p) { p->mutable_symbols(1)->set_name("N-1"); },
       "all.py: symbols[1].name: invalid symbol name \"N-1\""},
      {"symbol bad user name", [](pb::Program* p) { p->mutable_symbols(1)->set_user_name("i n"); },
       "all.py: symbols[1].user_name: invalid symbol user name \"i n\""},
      {"param bad user name", [](pb::Program* p) { p->mutable_params(0)->set_user_name("2x"); },
       "params[0].user_name: invalid parameter user name \"2x\""},
      {"param dtype unknown",
       [](pb::Program* p) {
         p->mutable_params(2)->mutable_buffer()->set_dtype(static_cast<pb::DType>(99));
       },
       "all.py:2:3: params[2].buffer.dtype: unknown DType value 99"},
      {"param scope unspecified",
       [](pb::Program* p) { p->mutable_params(0)->mutable_buffer()->clear_scope(); },
       "params[0].buffer.scope: SCOPE_UNSPECIFIED (0) is not allowed; a Scope value is required"},
      {"param without buffer", [](pb::Program* p) { p->mutable_params(0)->clear_buffer(); },
       "params[0].buffer: param without buffer"},
      {"param buffer name",
       [](pb::Program* p) { p->mutable_params(0)->mutable_buffer()->set_name("x.y"); },
       "params[0].buffer.name: invalid buffer name \"x.y\""},
      {"no kernel", [](pb::Program* p) { p->clear_kernel(); }, "kernel: program without kernel"},
      {"empty grid", [](pb::Program* p) { p->mutable_kernel()->clear_grid(); },
       "all.py:3:5: kernel.grid: grid must have 1 to 3 dimensions, got 0"},
      {"4-d grid", [](pb::Program* p) { *p->mutable_kernel()->add_grid() = p->kernel().grid(2); },
       "kernel.grid: grid must have 1 to 3 dimensions, got 4"},
      {"block vars count",
       [](pb::Program* p) { p->mutable_kernel()->mutable_block_vars()->RemoveLast(); },
       "kernel.block_vars: 2 block vars for a 3-dimensional grid"},
      {"bad block var", [](pb::Program* p) { p->mutable_kernel()->set_block_vars(1, "b y"); },
       "kernel.block_vars[1]: invalid block variable name \"b y\""},
      {"no threads", [](pb::Program* p) { p->mutable_kernel()->clear_threads(); },
       "kernel.threads: threads must have 1 to 3 entries, got 0"},
      {"4 thread entries", [](pb::Program* p) { p->mutable_kernel()->add_threads(1); },
       "kernel.threads: threads must have 1 to 3 entries, got 4"},
      {"zero threads", [](pb::Program* p) { p->mutable_kernel()->set_threads(1, 0); },
       "kernel.threads[1]: thread extent must be positive, got 0"},
      {"negative threads", [](pb::Program* p) { p->mutable_kernel()->set_threads(0, -128); },
       "kernel.threads[0]: thread extent must be positive, got -128"},
      {"stmt kind unspecified", [](pb::Program* p) { Body(p, 0)->clear_kind(); },
       "all.py:4:3: kernel.body[0].kind: STMT_KIND_UNSPECIFIED (0) is not allowed; a StmtKind "
       "value is required"},
      {"stmt kind unknown",
       [](pb::Program* p) { Body(p, 6)->set_kind(static_cast<pb::StmtKind>(77)); },
       "all.py:11:3: kernel.body[6].kind: unknown StmtKind value 77"},
      {"alloc without buffer", [](pb::Program* p) { Body(p, 1)->clear_buffer(); },
       "all.py:3:5: kernel.body[1].buffer: alloc without buffer"}, // the kernel's loc
      {"alloc bad buffer name", [](pb::Program* p) { Body(p, 0)->mutable_buffer()->set_name("9"); },
       "all.py:4:3: kernel.body[0].buffer.name: invalid buffer name \"9\""},
      {"alloc empty buffer name",
       [](pb::Program* p) { Body(p, 1)->mutable_buffer()->clear_name(); },
       "kernel.body[1].buffer.name: missing buffer name"},
      {"copy with one region", [](pb::Program* p) { Body(p, 5)->mutable_regions()->RemoveLast(); },
       "all.py:10:3: kernel.body[5].regions: copy needs 2 regions (src, dst), got 1"},
      {"gemm with two regions", [](pb::Program* p) { Body(p, 6)->mutable_regions()->RemoveLast(); },
       "all.py:11:3: kernel.body[6].regions: gemm needs 3 regions (A, B, C), got 2"},
      {"gemm policy unspecified", [](pb::Program* p) { Body(p, 6)->clear_policy(); },
       "kernel.body[6].policy: GEMM_POLICY_UNSPECIFIED (0) is not allowed"},
      {"fill without value", [](pb::Program* p) { Body(p, 7)->clear_value(); },
       "kernel.body[7].value: fill without value"},
      {"reduce kind unknown",
       [](pb::Program* p) { Body(p, 8)->set_reduce_kind(static_cast<pb::ReduceKind>(6)); },
       "kernel.body[8].reduce_kind: unknown ReduceKind value 6"},
      {"atomic with two regions and a value",
       [](pb::Program* p) { *Body(p, 10)->mutable_value() = p->kernel().body(9).value(); },
       "kernel.body[10].regions: atomic needs regions {dst} and a value, or regions {dst, src} "
       "and no value; got 2 regions and a value"},
      {"atomic op unspecified", [](pb::Program* p) { Body(p, 9)->clear_atomic_op(); },
       "kernel.body[9].atomic_op: ATOMIC_OP_UNSPECIFIED (0) is not allowed"},
      {"region without buffer",
       [](pb::Program* p) { Body(p, 5)->mutable_regions(0)->clear_buffer(); },
       "all.py:10:10: kernel.body[5].regions[0].buffer: missing buffer name"},
      {"range without min",
       [](pb::Program* p) { Body(p, 5)->mutable_regions(0)->mutable_ranges(1)->clear_min(); },
       "all.py:10:10: kernel.body[5].regions[0].ranges[1]: range without min"},
      {"range without extent",
       [](pb::Program* p) { Body(p, 5)->mutable_regions(1)->mutable_ranges(0)->clear_extent(); },
       "kernel.body[5].regions[1].ranges[0]: range without extent"},
      {"for kind unspecified", [](pb::Program* p) { Body(p, 11)->clear_for_kind(); },
       "all.py:20:3: kernel.body[11].for_kind: FOR_KIND_UNSPECIFIED (0) is not allowed; a ForKind "
       "value is required"},
      {"for without loop vars",
       [](pb::Program* p) {
         Body(p, 11)->clear_loop_vars();
         Body(p, 11)->clear_extents();
       },
       "kernel.body[11].loop_vars: for loop without loop variables"},
      {"for vars and extents differ", [](pb::Program* p) { Body(p, 11)->add_loop_vars("k2"); },
       "kernel.body[11].extents: for loop has 2 loop_vars but 1 extents"},
      {"pipelined loop with two vars",
       [](pb::Program* p) {
         Body(p, 11)->add_loop_vars("k2");
         *Body(p, 11)->add_extents() = p->kernel().body(11).extents(0);
       },
       "kernel.body[11].loop_vars: pipelined loop has 2 loop_vars; only a parallel loop may "
       "have more than one"},
      {"bad loop var", [](pb::Program* p) { Body(p, 11)->mutable_body(0)->set_loop_vars(1, "j)"); },
       "kernel.body[11].body[0].loop_vars[1]: invalid loop variable name \"j)\""},
      {"store without value", [](pb::Program* p) { InnerStore(p)->clear_value(); },
       "all.py:21:7: kernel.body[11].body[0].body[0].value: store without value"},
      {"store without buffer", [](pb::Program* p) { InnerStore(p)->clear_name(); },
       "kernel.body[11].body[0].body[0].name: missing buffer name"},
      {"binary with one arg",
       [](pb::Program* p) { InnerStore(p)->mutable_value()->mutable_args()->RemoveLast(); },
       "all.py:21:20: kernel.body[11].body[0].body[0].value.args: binary expression needs 2 "
       "args, got 1"},
      {"bin op unspecified", [](pb::Program* p) { InnerStore(p)->mutable_value()->clear_bin_op(); },
       "all.py:21:20: kernel.body[11].body[0].body[0].value.bin_op: BIN_OP_UNSPECIFIED (0) is "
       "not allowed; a BinOp value is required"},
      {"unknown bin op on a literal",
       [](pb::Program* p) {
         p->mutable_kernel()->mutable_grid(1)->set_bin_op(static_cast<pb::BinOp>(1000));
       },
       "kernel.grid[1].bin_op: unknown BinOp value 1000"},
      {"expr kind unspecified",
       [](pb::Program* p) { InnerStore(p)->mutable_value()->mutable_args(1)->clear_kind(); },
       "all.py:21:20: kernel.body[11].body[0].body[0].value.args[1].kind: EXPR_KIND_UNSPECIFIED"},
      {"expr dtype unknown",
       [](pb::Program* p) {
         InnerStore(p)->mutable_value()->mutable_args(1)->set_dtype(static_cast<pb::DType>(-3));
       },
       "value.args[1].dtype: unknown DType value -3"},
      {"load without buffer name",
       [](pb::Program* p) { InnerStore(p)->mutable_value()->mutable_args(0)->clear_name(); },
       "kernel.body[11].body[0].body[0].value.args[0].name: missing buffer name"},
      {"var with bad name",
       [](pb::Program* p) {
         InnerStore(p)->mutable_value()->mutable_args(0)->mutable_args(0)->set_name("i+1");
       },
       "value.args[0].args[0].name: invalid variable name \"i+1\""},
      {"literal with args",
       [](pb::Program* p) {
         *p->mutable_kernel()->mutable_grid(1)->add_args() = p->kernel().grid(2);
       },
       "kernel.grid[1].args: int literal needs 0 args, got 1"},
      {"pow with one arg",
       [](pb::Program* p) {
         // body[15] stores: 21 binary, 3 unary, then intrinsics; pow is the 8th.
         Body(p, 15)->mutable_body(21 + 3 + 7)->mutable_value()->mutable_args()->RemoveLast();
       },
       "kernel.body[15].body[31].value.args: call to pow needs 2 args, got 1"},
      {"intrinsic unspecified",
       [](pb::Program* p) { Body(p, 15)->mutable_body(24)->mutable_value()->clear_intrinsic(); },
       "kernel.body[15].body[24].value.intrinsic: INTRINSIC_UNSPECIFIED (0) is not allowed"},
      {"un op unknown",
       [](pb::Program* p) {
         Body(p, 15)->mutable_body(21)->mutable_value()->set_un_op(static_cast<pb::UnOp>(4));
       },
       "kernel.body[15].body[21].value.un_op: unknown UnOp value 4"},
      {"thread index dimension",
       [](pb::Program* p) { Body(p, 12)->mutable_cond()->mutable_args(0)->set_int_value(3); },
       "all.py:30:3: kernel.body[12].cond.args[0].int_value: thread index dimension must be 0, "
       "1 or 2, got 3"},
      {"if without cond", [](pb::Program* p) { Body(p, 12)->clear_cond(); },
       "all.py:30:3: kernel.body[12].cond: if statement without cond"},
      {"bad stmt in else branch",
       [](pb::Program* p) { Body(p, 12)->mutable_else_body(2)->clear_extents(); },
       "kernel.body[12].else_body[2].extents: for loop has 1 loop_vars but 0 extents"},
      {"annotate_layout without layout", [](pb::Program* p) { Body(p, 13)->clear_layout(); },
       "kernel.body[13].layout: missing layout kind"},
      {"use_swizzle bad order", [](pb::Program* p) { Body(p, 14)->set_swizzle_order("diag"); },
       "kernel.body[14].swizzle_order: swizzle order must be \"row\" or \"col\", got \"diag\""},
      {"reduce with three regions",
       [](pb::Program* p) { *Body(p, 8)->add_regions() = p->kernel().body(8).regions(0); },
       "kernel.body[8].regions: reduce needs 2 regions (src, dst), got 3"},
      {"fill without regions", [](pb::Program* p) { Body(p, 7)->clear_regions(); },
       "kernel.body[7].regions: fill needs 1 region (dst), got 0"},
      {"unary without arg",
       [](pb::Program* p) { Body(p, 15)->mutable_body(22)->mutable_value()->clear_args(); },
       "kernel.body[15].body[22].value.args: unary expression needs 1 arg, got 0"},
      {"cast with two args",
       [](pb::Program* p) {
         pb::Expr* cast = Body(p, 15)->mutable_body(40)->mutable_value();
         *cast->add_args() = cast->args(0);
       },
       "kernel.body[15].body[40].value.args: cast needs 1 arg, got 2"},
      {"select with two args",
       [](pb::Program* p) {
         Body(p, 15)->mutable_body(55)->mutable_value()->mutable_args()->RemoveLast();
       },
       "kernel.body[15].body[55].value.args: select needs 3 args, got 2"},
      {"use_swizzle without order", [](pb::Program* p) { Body(p, 14)->clear_swizzle_order(); },
       "kernel.body[14].swizzle_order: swizzle order must be \"row\" or \"col\", got \"\""},
      {"intrinsic unknown",
       [](pb::Program* p) {
         Body(p, 15)->mutable_body(25)->mutable_value()->set_intrinsic(
             static_cast<pb::Intrinsic>(18));
       },
       "kernel.body[15].body[25].value.intrinsic: unknown Intrinsic value 18"},
      {"bad attribute key", [](pb::Program* p) { (*p->mutable_attrs())["fast-math"] = "1"; },
       "attrs: invalid attribute key \"fast-math\" (expected [A-Za-z_][A-Za-z0-9_.]*, at most 256 "
       "characters)"},
      {"attribute key starting with a dot",
       [](pb::Program* p) { (*p->mutable_attrs())[".x"] = "1"; },
       "attrs: invalid attribute key \".x\""},
  };
}

TEST(ProtoConvertTest, RejectsInvalidMessages) {
  for (const RejectCase& c : RejectCases()) {
    SCOPED_TRACE(c.name);
    pb::Program proto = EverythingProto();
    c.mutate(&proto);
    absl::StatusOr<Program> result = FromProto(proto);
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(result.status().message()), HasSubstr(c.want));
  }
}

TEST(ProtoConvertTest, AcceptsDottedAttributeKeysAndEmptyProgramParts) {
  Program p = Everything();
  p.attrs["a.b.c_1"] = "";
  p.name = std::string(256, 'n'); // the longest name accepted
  p.symbols.clear();
  p.params.clear();
  p.kernel.body.clear();
  pb::Program proto;
  ToProto(p, &proto);
  absl::StatusOr<Program> back = FromProto(proto);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, p);
}

// --- Nesting -----------------------------------------------------------------

// kernel.body gets a store whose value is `levels` nested negations of a
// literal (an expression `levels + 1` deep).
pb::Program WithDeepExpr(int levels) {
  pb::Program proto = EverythingProto();
  pb::Stmt* s = proto.mutable_kernel()->add_body();
  s->set_kind(pb::STMT_KIND_STORE);
  s->set_name("v");
  pb::Expr* e = s->mutable_value();
  for (int i = 0; i < levels; ++i) {
    e->set_kind(pb::EXPR_KIND_UNARY);
    e->set_dtype(pb::DTYPE_INT32);
    e->set_un_op(pb::UN_OP_NEG);
    e = e->add_args();
  }
  e->set_kind(pb::EXPR_KIND_INT);
  e->set_dtype(pb::DTYPE_INT32);
  return proto;
}

// kernel.body gets `levels` nested serial loops (alternating with if).
pb::Program WithDeepStmts(int levels) {
  pb::Program proto = EverythingProto();
  google::protobuf::RepeatedPtrField<pb::Stmt>* body = proto.mutable_kernel()->mutable_body();
  for (int i = 0; i < levels; ++i) {
    pb::Stmt* s = body->Add();
    if (i % 2 == 0) {
      s->set_kind(pb::STMT_KIND_FOR);
      s->set_for_kind(pb::FOR_KIND_SERIAL);
      s->add_loop_vars("i" + std::to_string(i));
      pb::Expr* extent = s->add_extents();
      extent->set_kind(pb::EXPR_KIND_INT);
      extent->set_dtype(pb::DTYPE_INT32);
      extent->set_int_value(2);
      body = s->mutable_body();
    } else {
      s->set_kind(pb::STMT_KIND_IF);
      pb::Expr* cond = s->mutable_cond();
      cond->set_kind(pb::EXPR_KIND_INT);
      cond->set_dtype(pb::DTYPE_BOOL);
      body = s->mutable_else_body();
    }
  }
  return proto;
}

TEST(ProtoConvertTest, DeepExpressionIsAnErrorNotACrash) {
  absl::StatusOr<Program> result = FromProto(WithDeepExpr(10000));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(result.status().message()),
              HasSubstr("expression nesting is deeper than 256 levels"));
  // The path keeps its ends rather than 257 segments.
  EXPECT_THAT(std::string(result.status().message()), HasSubstr("kernel.body[19].value.args[0]"));
  EXPECT_LT(result.status().message().size(), 400u);
}

TEST(ProtoConvertTest, DeepStatementsAreAnErrorNotACrash) {
  absl::StatusOr<Program> result = FromProto(WithDeepStmts(10000));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(result.status().message()),
              HasSubstr("statement nesting is deeper than 256 levels"));
}

TEST(ProtoConvertTest, NestingLimitIsExactly256) {
  EXPECT_TRUE(FromProto(WithDeepExpr(255)).ok()); // 256 levels
  EXPECT_FALSE(FromProto(WithDeepExpr(256)).ok());
  EXPECT_TRUE(FromProto(WithDeepStmts(256)).ok());
  EXPECT_FALSE(FromProto(WithDeepStmts(257)).ok());
}

// --- Size --------------------------------------------------------------------

// An empty element is ~2 bytes on the wire and up to 728 in the IR: 40,000
// statements, params or expression nodes past the limits are an error before
// they are allocated, naming the field.
TEST(ProtoConvertTest, SizeIsBounded) {
  struct Case {
    std::string name;
    std::function<void(pb::Program*)> grow;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"statements",
       [](pb::Program* p) {
         for (int i = 0; i < 40000; ++i) p->mutable_kernel()->add_body();
       },
       "kernel.body: program has more than 32768 statements and declarations"},
      {"nested statements",
       [](pb::Program* p) {
         for (int i = 0; i < 20; ++i) {
           pb::Stmt* s = p->mutable_kernel()->add_body();
           s->set_kind(pb::STMT_KIND_IF);
           s->mutable_cond()->set_kind(pb::EXPR_KIND_INT);
           s->mutable_cond()->set_dtype(pb::DTYPE_BOOL);
           for (int j = 0; j < 2000; ++j) {
             pb::Stmt* inner = s->add_body();
             inner->set_kind(pb::STMT_KIND_USE_SWIZZLE);
             inner->set_swizzle_order("row");
           }
         }
       },
       ".body: program has more than 32768 statements and declarations"},
      {"params",
       [](pb::Program* p) {
         for (int i = 0; i < 40000; ++i) p->add_params();
       },
       "params: program has more than 32768 statements and declarations"},
      {"load indices",
       [](pb::Program* p) {
         pb::Stmt* s = p->mutable_kernel()->add_body();
         s->set_kind(pb::STMT_KIND_STORE);
         s->set_name("v");
         pb::Expr* e = s->mutable_value();
         e->set_kind(pb::EXPR_KIND_LOAD);
         e->set_dtype(pb::DTYPE_FLOAT32);
         e->set_name("A");
         for (int i = 0; i < 300000; ++i) e->add_args();
       },
       "kernel.body[19].value.args: program has more than 262144 expression nodes"},
      {"store indices",
       [](pb::Program* p) {
         pb::Stmt* s = p->mutable_kernel()->add_body();
         s->set_kind(pb::STMT_KIND_STORE);
         s->set_name("v");
         s->mutable_value()->set_kind(pb::EXPR_KIND_INT);
         s->mutable_value()->set_dtype(pb::DTYPE_FLOAT32);
         for (int i = 0; i < 300000; ++i) s->add_indices();
       },
       "kernel.body[19].indices: program has more than 262144 expression nodes"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    pb::Program proto = EverythingProto();
    c.grow(&proto);
    absl::StatusOr<Program> result = FromProto(proto);
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(result.status().message()), HasSubstr(c.message));
  }
}

// --- Arbitrary input ---------------------------------------------------------

// What the fuzzer does, briefly: any message that parses either converts or
// is an InvalidArgument, and whatever converts round-trips.
enum class Outcome { kUnparsable, kRejected, kAccepted };

Outcome CheckArbitrary(const std::string& bytes) {
  google::protobuf::LogSilencer quiet; // parse errors about invalid UTF-8
  pb::Program proto;
  if (!proto.ParseFromString(bytes)) return Outcome::kUnparsable;
  absl::StatusOr<Program> ir = FromProto(proto);
  if (!ir.ok()) {
    EXPECT_EQ(ir.status().code(), absl::StatusCode::kInvalidArgument);
    return Outcome::kRejected;
  }
  pb::Program again;
  ToProto(*ir, &again);
  absl::StatusOr<Program> ir2 = FromProto(again);
  EXPECT_TRUE(ir2.ok()) << ir2.status();
  if (!ir2.ok()) return Outcome::kAccepted;
  pb::Program third;
  ToProto(*ir2, &third);
  EXPECT_EQ(Bytes(again), Bytes(third));
  return Outcome::kAccepted;
}

TEST(ProtoConvertTest, RandomBytesNeverCrash) {
  std::mt19937 rng(12345);
  for (int iter = 0; iter < 3000; ++iter) {
    std::string bytes(rng() % 256, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    CheckArbitrary(bytes);
  }
}

TEST(ProtoConvertTest, MutatedProgramsNeverCrash) {
  const std::string base = EverythingProto().SerializeAsString();
  std::mt19937 rng(777);
  std::map<Outcome, int> outcomes;
  for (int iter = 0; iter < 3000; ++iter) {
    std::string bytes = base;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < flips; ++i) {
      bytes[rng() % bytes.size()] ^= static_cast<char>(1 << (rng() % 8));
    }
    ++outcomes[CheckArbitrary(bytes)];
  }
  // Bit flips in literals and locations keep the program valid; flips in
  // enums, names and counts make it invalid. Both paths must be exercised.
  EXPECT_GT(outcomes[Outcome::kAccepted], 100);
  EXPECT_GT(outcomes[Outcome::kRejected], 100);
}

} // namespace
} // namespace kiln::ir
