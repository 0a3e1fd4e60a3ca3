// A small character-level transformer language model: token and position embeddings, causal
// TransformerEncoderLayers (pre-norm), a linear head; AdamW with cosine decay and gradient
// clipping. Trains on a text file (default: the GPL-3 text that ships with Debian), prints the
// loss, then samples text from the model.
//
//   char_lm [--text FILE] [--steps N] [--batch N] [--context N] [--dim N] [--layers N]
//           [--heads N] [--lr X] [--threads N] [--sample N] [--seed N]
#include <tensor/tensor.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

using namespace tensor;
namespace F = tensor::nn::functional;

namespace {

struct Flags {
  std::string text = "/usr/share/common-licenses/GPL-3";
  int steps = 800, batch = 16, context = 64, dim = 128, layers = 2, heads = 4, threads = 2, sample = 300;
  double lr = 3e-3;
  uint64_t seed = 0;
};

Flags parse(int argc, char** argv) {
  Flags f;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--text") f.text = v;
    else if (a == "--steps") f.steps = std::atoi(v.c_str());
    else if (a == "--batch") f.batch = std::atoi(v.c_str());
    else if (a == "--context") f.context = std::atoi(v.c_str());
    else if (a == "--dim") f.dim = std::atoi(v.c_str());
    else if (a == "--layers") f.layers = std::atoi(v.c_str());
    else if (a == "--heads") f.heads = std::atoi(v.c_str());
    else if (a == "--lr") f.lr = std::atof(v.c_str());
    else if (a == "--threads") f.threads = std::atoi(v.c_str());
    else if (a == "--sample") f.sample = std::atoi(v.c_str());
    else if (a == "--seed") f.seed = std::strtoull(v.c_str(), nullptr, 10);
    else {
      std::fprintf(stderr, "unknown flag %s\n", a.c_str());
      std::exit(2);
    }
  }
  if ((argc - 1) % 2) {
    std::fprintf(stderr, "usage: char_lm [--text FILE] [--steps N] [--batch N] [--context N] [--dim N] [--layers N] "
                         "[--heads N] [--lr X] [--threads N] [--sample N] [--seed N]\n");
    std::exit(2);
  }
  return f;
}

struct CharLM : nn::Module {
  CharLM(int64_t vocab, int64_t context, int64_t dim, int64_t layers, int64_t heads)
      : tok(register_module("tok", nn::Embedding(vocab, dim))),
        pos(register_module("pos", nn::Embedding(context, dim))),
        blocks(register_module("blocks", nn::ModuleList())),
        norm(register_module("norm", nn::LayerNorm(nn::LayerNormOptions({dim})))),
        head(register_module("head", nn::Linear(dim, vocab))) {
    for (int64_t i = 0; i < layers; ++i)
      blocks->push_back(nn::TransformerEncoderLayer(nn::TransformerEncoderLayerOptions(dim, heads)
                                                        .dim_feedforward(4 * dim).dropout(0.0).activation(tensor::kGELU)
                                                        .batch_first(true).norm_first(true)));
  }
  /// tokens [N, T] -> logits [N, T, vocab].
  Tensor forward(const Tensor& tokens) {
    const int64_t T = tokens.size(1);
    Tensor x = tok(tokens) + pos(arange(T));
    // Causal mask: true where a position may not attend (a later position).
    Tensor mask = arange(T).unsqueeze(0) > arange(T).unsqueeze(1);
    for (size_t i = 0; i < blocks->size(); ++i) x = blocks->ptr<nn::TransformerEncoderLayerImpl>(i)->forward(x, mask);
    return head(norm(x));
  }
  nn::Embedding tok, pos;
  nn::ModuleList blocks;
  nn::LayerNorm norm;
  nn::Linear head;
};

}  // namespace

int main(int argc, char** argv) {
  // Line by line even into a file or pipe: a killed run keeps every line it printed.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  const Flags f = parse(argc, argv);
  set_num_threads(f.threads);
  manual_seed(f.seed);
  try {
    std::ifstream in(f.text, std::ios::binary);
    if (!in) throw Error("char_lm: cannot read " + f.text);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    if (static_cast<int64_t>(text.size()) < f.context + 2) throw Error("char_lm: the text is shorter than the context");
    std::map<unsigned char, int64_t> index;
    for (unsigned char c : text) index.emplace(c, 0);
    std::vector<unsigned char> chars;
    for (auto& kv : index) { kv.second = static_cast<int64_t>(chars.size()); chars.push_back(kv.first); }
    std::vector<int64_t> ids(text.size());
    for (size_t i = 0; i < text.size(); ++i) ids[i] = index[static_cast<unsigned char>(text[i])];
    Tensor data = from_blob(ids.data(), {static_cast<int64_t>(ids.size())}, kInt64).clone();
    const int64_t vocab = static_cast<int64_t>(chars.size());
    std::printf("char_lm: %zu characters, vocabulary %lld, context %d, %d layers of width %d\n", text.size(),
                static_cast<long long>(vocab), f.context, f.layers, f.dim);

    auto model = std::make_shared<CharLM>(vocab, f.context, f.dim, f.layers, f.heads);
    optim::AdamW opt(model->parameters(), optim::AdamWOptions(f.lr).weight_decay(0.01));
    optim::CosineAnnealingLR sched(opt, f.steps, f.lr * 0.1);
    const Tensor offsets = arange(f.context + 1);
    const auto t0 = std::chrono::steady_clock::now();
    double first = 0, last = 0;
    for (int step = 1; step <= f.steps; ++step) {
      Tensor starts = randint(0, data.size(0) - f.context - 1, {f.batch});
      Tensor windows = data.index_select(0, (starts.unsqueeze(1) + offsets).reshape({-1})).view({f.batch, f.context + 1});
      Tensor x = windows.narrow(1, 0, f.context), y = windows.narrow(1, 1, f.context);
      opt.zero_grad();
      Tensor loss = F::cross_entropy(model->forward(x).reshape({-1, vocab}), y.reshape({-1}));
      loss.backward();
      nn::utils::clip_grad_norm_(model->parameters(), 1.0);
      opt.step();
      sched.step();
      last = loss.item<double>();
      if (step == 1) first = last;
      if (step % 25 == 0 || step == 1 || step == f.steps) {
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::printf("step %4d  loss %.4f  (%.1f steps/s)\n", step, last, step / s);
        std::fflush(stdout);
      }
    }

    // Sample: start from the first context window, draw each next character from the softmax.
    model->eval();
    NoGradGuard no_grad;
    // Prompt: the text's middle (its start is an upper-case header).
    const size_t at = ids.size() / 2;
    std::vector<int64_t> ctx(ids.begin() + at, ids.begin() + at + f.context);
    std::string out;
    for (int i = 0; i < f.sample; ++i) {
      Tensor xs = from_blob(ctx.data() + ctx.size() - f.context, {1, f.context}, kInt64);
      Tensor probs = softmax(model->forward(xs).select(1, f.context - 1).reshape({vocab}) / 0.8, 0);
      // Inverse-CDF draw from one uniform number.
      const double u = rand({1}, kFloat64).item<double>();
      Tensor cdf = probs.to(kFloat64).cumsum(0);
      int64_t next = (cdf < u).sum().item<int64_t>();
      if (next >= vocab) next = vocab - 1;
      ctx.push_back(next);
      out.push_back(static_cast<char>(chars[next]));
    }
    std::printf("--- sample ---\n%s\n--- end ---\n", out.c_str());
    std::printf("loss %.4f -> %.4f\n", first, last);
    return last < first ? 0 : 1;
  } catch (const Error& e) {
    std::fprintf(stderr, "char_lm: %s\n", e.what());
    return 1;
  }
}
