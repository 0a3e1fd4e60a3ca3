// einsum as a composite of views, sum and bmm (so its gradient comes from theirs).
#include <algorithm>
#include <array>
#include "src/dispatch/BackendKernels.h"
#include "src/ops/CompositeOps.h"

#include "src/core/Check.h"
#include "tensor/linalg.h"
#include "tensor/ops.h"

namespace tensor {
namespace {

using detail::shape_str;

// Note [einsum]
// Every label (and each dim covered by "...") gets an id. Each operand is brought to one
// common rank L with its dims in id order: repeated labels become a diagonal, absent labels a
// size-1 dim. In that aligned form broadcasting is implicit, and operands are contracted left
// to right: a label is summed as soon as no later operand and not the output uses it. One
// contraction is a bmm over [batch, left-only, summed] x [batch, summed, right-only] dims; a
// summed label present on one side only is summed on that side first.

constexpr int kEllipsisBase = 52;  // ids 0-51: a-z then A-Z; 52+: dims under "..."

int label_id(char c) {
  if (c >= 'a' && c <= 'z') return c - 'a';
  if (c >= 'A' && c <= 'Z') return 26 + (c - 'A');
  return -1;
}

struct Term {
  std::vector<int> labels;  // -1 marks where "..." sits
  bool ellipsis = false;
};

Term parse_term(const std::string& eq, const std::string& s) {
  Term t;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == ' ') continue;
    if (c == '.') {
      TENSOR_CHECK(s.compare(i, 3, "...") == 0 && !t.ellipsis,
                   "einsum(): invalid ellipsis in equation \"{}\" (expected at most one \"...\" per operand)", eq);
      t.ellipsis = true;
      t.labels.push_back(-1);
      i += 2;
      continue;
    }
    const int id = label_id(c);
    TENSOR_CHECK(id >= 0, "einsum(): invalid subscript '{}' in equation \"{}\" (subscripts must be letters)", c, eq);
    t.labels.push_back(id);
  }
  return t;
}

/// Sums the aligned tensor over dims whose label is in `ids` (keepdim, so alignment stays).
Tensor sum_ids(const Tensor& t, const std::vector<int>& dims) {
  if (dims.empty()) return t;
  std::vector<int64_t> d(dims.begin(), dims.end());
  return t.sum(d, /*keepdim=*/true);
}

/// Contracts two aligned operands over the dims in `summed` (all other dims are kept).
Tensor contract(Tensor l, Tensor r, const std::vector<bool>& summed) {
  const int64_t L = l.dim();
  std::vector<int> l_only_sum, r_only_sum;
  for (int64_t d = 0; d < L; ++d) {
    if (!summed[d]) continue;
    if (l.size(d) != 1 && r.size(d) == 1) l_only_sum.push_back(static_cast<int>(d));
    if (r.size(d) != 1 && l.size(d) == 1) r_only_sum.push_back(static_cast<int>(d));
  }
  l = sum_ids(l, l_only_sum);
  r = sum_ids(r, r_only_sum);
  std::vector<int64_t> batch, lo, ro, sm, ones;
  int64_t nb = 1, nl = 1, nr = 1, ns = 1;
  for (int64_t d = 0; d < L; ++d) {
    const int64_t a = l.size(d), b = r.size(d);
    if (summed[d] && (a != 1 || b != 1)) {
      TENSOR_CHECK(a == b, "einsum(): operands do not broadcast: a summed dim has sizes {} and {}", a, b);
      sm.push_back(d); ns *= a;
    } else if (a != 1 && b != 1) {
      TENSOR_CHECK(a == b, "einsum(): operands do not broadcast: a dim has sizes {} and {}", a, b);
      batch.push_back(d); nb *= a;
    } else if (a != 1) {
      lo.push_back(d); nl *= a;
    } else if (b != 1) {
      ro.push_back(d); nr *= b;
    } else {
      ones.push_back(d);
    }
  }
  std::vector<int64_t> lp(batch), rp(batch);
  lp.insert(lp.end(), lo.begin(), lo.end()); lp.insert(lp.end(), sm.begin(), sm.end());
  lp.insert(lp.end(), ro.begin(), ro.end()); lp.insert(lp.end(), ones.begin(), ones.end());
  rp.insert(rp.end(), sm.begin(), sm.end()); rp.insert(rp.end(), ro.begin(), ro.end());
  rp.insert(rp.end(), lo.begin(), lo.end()); rp.insert(rp.end(), ones.begin(), ones.end());
  Tensor lm = l.permute(lp).reshape({nb, nl, ns});
  Tensor rm = r.permute(rp).reshape({nb, ns, nr});
  Tensor prod = bmm(lm, rm);
  // Back to the aligned rank: [batch..., lo..., ro...] plus size 1 for summed and absent dims.
  std::vector<int64_t> shape;
  std::vector<int64_t> order;  // aligned dim of each position in `shape`
  for (int64_t d : batch) { shape.push_back(l.size(d)); order.push_back(d); }
  for (int64_t d : lo) { shape.push_back(l.size(d)); order.push_back(d); }
  for (int64_t d : ro) { shape.push_back(r.size(d)); order.push_back(d); }
  for (int64_t d : sm) { shape.push_back(1); order.push_back(d); }
  for (int64_t d : ones) { shape.push_back(1); order.push_back(d); }
  Tensor out = prod.reshape(shape);
  std::vector<int64_t> inv(L);
  for (int64_t i = 0; i < L; ++i) inv[order[i]] = i;
  return out.permute(inv);
}

}  // namespace

namespace {
Tensor einsum_composite(const std::string& equation, TensorList operands) {
  const std::string& eq = equation;
  TENSOR_CHECK(!operands.empty(), "einsum(): must provide at least one operand");
  const size_t arrow = eq.find("->");
  const std::string lhs = arrow == std::string::npos ? eq : eq.substr(0, arrow);
  std::vector<Term> terms;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    terms.push_back(parse_term(eq, lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  TENSOR_CHECK(terms.size() == operands.size(),
               "einsum(): the equation \"{}\" has {} operand(s) but {} tensor(s) were given", eq, terms.size(),
               operands.size());
  // Dims under "..." per operand, and the widest.
  int64_t n_ell = 0;
  std::array<int64_t, 128> label_size;
  label_size.fill(-1);
  for (size_t i = 0; i < terms.size(); ++i) {
    const Tensor& t = operands[i];
    TENSOR_CHECK(t.defined(), "einsum(): operand {} is undefined", i);
    const int64_t named = static_cast<int64_t>(terms[i].labels.size()) - (terms[i].ellipsis ? 1 : 0);
    TENSOR_CHECK(terms[i].ellipsis ? t.dim() >= named : t.dim() == named,
                 "einsum(): the subscripts of operand {} name {} dims but the operand has shape {}", i, named,
                 shape_str(t.sizes()));
    if (terms[i].ellipsis) n_ell = std::max(n_ell, t.dim() - named);
  }
  TENSOR_CHECK(n_ell <= 128 - kEllipsisBase, "einsum(): too many dims under \"...\"");
  // Label counts decide the implicit output and which labels may be summed.
  std::array<int, 128> count{};
  for (const Term& t : terms)
    for (int id : t.labels) if (id >= 0) ++count[id];
  std::vector<int> out_ids;
  bool out_has_ell = false;
  if (arrow != std::string::npos) {
    Term o = parse_term(eq, eq.substr(arrow + 2));
    std::array<bool, 128> seen{};
    for (int id : o.labels) {
      if (id == -1) {
        out_has_ell = true;
        for (int64_t e = 0; e < n_ell; ++e) out_ids.push_back(kEllipsisBase + static_cast<int>(e));
        continue;
      }
      TENSOR_CHECK(count[id] > 0, "einsum(): output subscript '{}' in \"{}\" does not appear in any input", 
                   static_cast<char>(id < 26 ? 'a' + id : 'A' + id - 26), eq);
      TENSOR_CHECK(!seen[id], "einsum(): output subscript '{}' appears more than once in \"{}\"",
                   static_cast<char>(id < 26 ? 'a' + id : 'A' + id - 26), eq);
      seen[id] = true;
      out_ids.push_back(id);
    }
    TENSOR_CHECK(out_has_ell || n_ell == 0,
                 "einsum(): \"...\" in the inputs of \"{}\" must also appear in the output", eq);
  } else {
    for (int64_t e = 0; e < n_ell; ++e) out_ids.push_back(kEllipsisBase + static_cast<int>(e));
    for (int id = 0; id < kEllipsisBase; ++id)
      if (count[id] == 1) out_ids.push_back(id);
  }
  // Aligned order: output ids first (so the final permute is the identity), then the rest.
  std::vector<int> order(out_ids);
  std::array<int, 128> pos;
  pos.fill(-1);
  for (size_t i = 0; i < order.size(); ++i) pos[order[i]] = static_cast<int>(i);
  for (int id = 0; id < kEllipsisBase; ++id)
    if (count[id] > 0 && pos[id] < 0) { pos[id] = static_cast<int>(order.size()); order.push_back(id); }
  const int64_t L = static_cast<int64_t>(order.size());

  // Align each operand.
  std::vector<Tensor> aligned;
  std::vector<std::array<bool, 128>> uses(terms.size());
  for (size_t i = 0; i < terms.size(); ++i) {
    Tensor t = operands[i];
    uses[i].fill(false);
    std::vector<int> ids;  // label id of each dim of t
    for (int id : terms[i].labels) {
      if (id >= 0) { ids.push_back(id); continue; }
      const int64_t k = t.dim() - (static_cast<int64_t>(terms[i].labels.size()) - 1);
      for (int64_t e = 0; e < k; ++e) ids.push_back(kEllipsisBase + static_cast<int>(n_ell - k + e));
    }
    // Repeated labels: take the diagonal (moved to the last dim) until each label is unique.
    for (bool again = true; again;) {
      again = false;
      for (size_t p = 0; p < ids.size() && !again; ++p)
        for (size_t q = p + 1; q < ids.size() && !again; ++q)
          if (ids[p] == ids[q]) {
            TENSOR_CHECK(t.size(p) == t.size(q), "einsum(): subscript repeated in operand {} for dims of sizes {} and {}",
                         i, t.size(p), t.size(q));
            t = t.diagonal(0, static_cast<int64_t>(p), static_cast<int64_t>(q));
            const int id = ids[p];
            ids.erase(ids.begin() + q);
            ids.erase(ids.begin() + p);
            ids.push_back(id);
            again = true;
          }
    }
    for (size_t d = 0; d < ids.size(); ++d) {
      const int id = ids[d];
      uses[i][id] = true;
      if (t.size(d) != 1) {
        TENSOR_CHECK(label_size[id] < 0 || label_size[id] == t.size(d) || label_size[id] == 1,
                     "einsum(): subscript {} has size {} in operand {} but size {} elsewhere (shapes must match or "
                     "broadcast)", id < kEllipsisBase ? std::string(1, id < 26 ? 'a' + id : 'A' + id - 26) : "...",
                     t.size(d), i, label_size[id]);
        label_size[id] = t.size(d);
      } else if (label_size[id] < 0) {
        label_size[id] = 1;
      }
    }
    // Permute present dims into aligned order, then insert size-1 dims for absent ids.
    std::vector<int64_t> perm(ids.size());
    for (size_t d = 0; d < ids.size(); ++d) perm[d] = static_cast<int64_t>(d);
    std::sort(perm.begin(), perm.end(), [&](int64_t x, int64_t y) { return pos[ids[x]] < pos[ids[y]]; });
    t = t.permute(perm);
    std::vector<int64_t> shape(L, 1);
    for (size_t d = 0; d < ids.size(); ++d) shape[pos[ids[perm[d]]]] = t.size(d);
    aligned.push_back(t.reshape(shape));
  }

  const int64_t n_out = static_cast<int64_t>(out_ids.size());
  auto used_later = [&](size_t after, int64_t d) {
    for (size_t j = after + 1; j < terms.size(); ++j)
      if (uses[j][order[d]]) return true;
    return false;
  };
  Tensor result = aligned[0];
  {
    // Labels only the first operand has and the output lacks are summed right away.
    std::vector<int> s;
    for (int64_t d = n_out; d < L; ++d)
      if (!used_later(0, d) && result.size(d) != 1) s.push_back(static_cast<int>(d));
    result = sum_ids(result, s);
  }
  for (size_t i = 1; i < aligned.size(); ++i) {
    std::vector<bool> summed(L, false);
    for (int64_t d = n_out; d < L; ++d) summed[d] = !used_later(i, d);
    result = contract(result, aligned[i], summed);
  }
  // Remaining non-output dims are size 1 (or summed now) and are dropped.
  std::vector<int> rest;
  for (int64_t d = n_out; d < L; ++d)
    if (result.size(d) != 1) rest.push_back(static_cast<int>(d));
  result = sum_ids(result, rest);
  std::vector<int64_t> out_shape;
  for (int64_t d = 0; d < n_out; ++d) out_shape.push_back(result.size(d));
  return result.reshape(out_shape);
}
}  // namespace
namespace ops {
TENSOR_COMPOSITE_OP(einsum, EinsumFn, einsum_composite)
}  // namespace ops
Tensor einsum(const std::string& equation, TensorList operands) { return ops::einsum_op()(equation, operands); }

}  // namespace tensor
