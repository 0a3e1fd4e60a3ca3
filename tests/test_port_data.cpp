// Ported-program test (issue 14): a libtorch data pipeline written in libtorch's spelling with
// `torch::` renamed to `tensor::`. A custom CRTP dataset, .map(Normalize).map(Stack), Lambda
// transforms, make_data_loader with each sampler, the distributed samplers' index partitions, and
// a short training loop that learns. Expected values are computed by hand in the test (or from
// libtorch's documented definitions), never taken from the code under test.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "tests/test_util.h"

namespace {

// Sample i: data [2, 2, 2] with channel 0 all i and channel 1 all 10 + i; target i (int64, 0-dim).
struct Squares : tensor::data::datasets::Dataset<Squares> {
  explicit Squares(int64_t n) : n_(n) {}
  tensor::data::Example<> get(size_t index) override {
    const auto i = static_cast<double>(index);
    tensor::Tensor data = tensor::stack({tensor::full({2, 2}, i), tensor::full({2, 2}, 10 + i)});
    return {data, tensor::tensor(static_cast<int64_t>(index))};
  }
  tensor::optional<size_t> size() const override { return static_cast<size_t>(n_); }
  int64_t n_;
};

// The targets of a stacked batch, as a list.
std::vector<int64_t> targets_of(const tensor::data::Example<>& batch) {
  tensor::Tensor t = batch.target.contiguous();
  return std::vector<int64_t>(t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + t.numel());
}

std::vector<size_t> iota(size_t begin, size_t end) {
  std::vector<size_t> v(end - begin);
  std::iota(v.begin(), v.end(), begin);
  return v;
}

}  // namespace

TEST(PortData, CustomDatasetGetAndDefaultGetBatch) {
  Squares ds(5);
  ASSERT_TRUE(ds.size().has_value());
  EXPECT_EQ(ds.size().value(), 5u);
  tensor::data::Example<> e = ds.get(3);
  EXPECT_EQ(e.data.sizes(), tensor::IntArrayRef({2, 2, 2}));
  EXPECT_EQ(e.data[0][1][1].item<float>(), 3.0f);
  EXPECT_EQ(e.data[1][0][0].item<float>(), 13.0f);
  // libtorch's Dataset::get_batch collects get(i) into a std::vector, in request order.
  std::vector<tensor::data::Example<>> batch = ds.get_batch({4, 1, 4});
  ASSERT_EQ(batch.size(), 3u);
  EXPECT_EQ(batch[0].target.item<int64_t>(), 4);
  EXPECT_EQ(batch[1].target.item<int64_t>(), 1);
  EXPECT_EQ(batch[2].target.item<int64_t>(), 4);
  // Example<> is libtorch's template: Example<Data, Target> and the target-less TensorExample.
  tensor::data::Example<std::string, int64_t> other{"x", 7};
  EXPECT_EQ(other.target, 7);
  tensor::data::TensorExample alone(tensor::ones({2}));
  EXPECT_EQ(alone.data.numel(), 2);
  tensor::optional<int> none = tensor::nullopt;
  EXPECT_FALSE(none.has_value());
}

TEST(PortData, NormalizeThenStack) {
  // Normalize's mean/stddev are per channel ([C, 1, 1]): channel 0 -> (i - 1) / 2, channel 1 ->
  // (10 + i - 2) / 4, values a reader can check by hand.
  auto ds = Squares(6)
                .map(tensor::data::transforms::Normalize<>({1.0, 2.0}, {2.0, 4.0}))
                .map(tensor::data::transforms::Stack<>());
  EXPECT_EQ(ds.size().value(), 6u);
  tensor::data::Example<> batch = ds.get_batch({5, 0});
  EXPECT_EQ(batch.data.sizes(), tensor::IntArrayRef({2, 2, 2, 2}));
  EXPECT_EQ(batch.data.scalar_type(), tensor::kFloat32);
  EXPECT_EQ(batch.target.sizes(), tensor::IntArrayRef({2}));
  EXPECT_EQ(targets_of(batch), (std::vector<int64_t>{5, 0}));
  EXPECT_FLOAT_EQ(batch.data[0][0][1][0].item<float>(), (5 - 1) / 2.0f);
  EXPECT_FLOAT_EQ(batch.data[0][1][0][1].item<float>(), (15 - 2) / 4.0f);
  EXPECT_FLOAT_EQ(batch.data[1][0][0][0].item<float>(), (0 - 1) / 2.0f);
  EXPECT_FLOAT_EQ(batch.data[1][1][1][1].item<float>(), (10 - 2) / 4.0f);
  // One mean and stddev (libtorch's Normalize<>(0.1307, 0.3081)) applies to every channel.
  auto one = Squares(2).map(tensor::data::transforms::Normalize<>(0.5, 0.25));
  std::vector<tensor::data::Example<>> b = one.get_batch({1});
  EXPECT_FLOAT_EQ(b[0].data[1][0][0].item<float>(), (11 - 0.5f) / 0.25f);
  // As in libtorch, the statistics have shape [C, 1, 1], so a 1-dim sample broadcasts to 3 dims.
  tensor::data::transforms::Normalize<> n(2.0, 4.0);
  tensor::Tensor flat = n(tensor::tensor({2.0f, 6.0f}));
  EXPECT_EQ(flat.sizes(), tensor::IntArrayRef({1, 1, 2}));
  EXPECT_FLOAT_EQ(flat[0][0][1].item<float>(), 1.0f);
}

TEST(PortData, LambdaTransforms) {
  using tensor::data::Example;
  namespace transforms = tensor::data::transforms;
  auto doubled = Squares(4).map(transforms::Lambda<Example<>>([](Example<> e) {
    e.target = e.target * 2;
    return e;
  }));
  auto shifted = std::move(doubled).map(transforms::TensorLambda<>([](tensor::Tensor x) { return x + 100; }));
  auto counted = std::move(shifted).map(transforms::BatchLambda<std::vector<Example<>>, int64_t>(
      [](std::vector<Example<>> batch) { return static_cast<int64_t>(batch.size()); }));
  EXPECT_EQ(counted.get_batch({0, 1, 2}), 3);
  auto stacked = Squares(4)
                     .map(transforms::Lambda<Example<>>([](Example<> e) {
                       e.target = e.target * 2;
                       return e;
                     }))
                     .map(transforms::TensorLambda<>([](tensor::Tensor x) { return x + 100; }))
                     .map(transforms::Stack<>());
  Example<> b = stacked.get_batch({3, 1});
  EXPECT_EQ(targets_of(b), (std::vector<int64_t>{6, 2}));
  EXPECT_EQ(b.data[0][1][0][0].item<float>(), 113.0f);
  // Stack<TensorExample> stacks data alone.
  std::vector<tensor::data::TensorExample> alone{tensor::data::TensorExample(tensor::zeros({3})),
                                                 tensor::data::TensorExample(tensor::ones({3}))};
  EXPECT_EQ(transforms::Stack<tensor::data::TensorExample>().apply_batch(alone).data.sizes(),
            tensor::IntArrayRef({2, 3}));
  tensor::testing::expect_error([] { transforms::Stack<>().apply_batch({}); }, {"Stack", "no examples"});
}

TEST(PortData, SequentialLoaderGivesBatchesInOrder) {
  auto ds = Squares(10).map(tensor::data::transforms::Stack<>());
  auto loader = tensor::data::make_data_loader<tensor::data::samplers::SequentialSampler>(std::move(ds), 4);
  for (int epoch = 0; epoch < 2; ++epoch) {
    std::vector<std::vector<int64_t>> got;
    for (auto& batch : *loader) got.push_back(targets_of(batch));
    EXPECT_EQ(got, (std::vector<std::vector<int64_t>>{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}})) << epoch;
  }
  auto dropping = tensor::data::make_data_loader<tensor::data::samplers::SequentialSampler>(
      Squares(10).map(tensor::data::transforms::Stack<>()),
      tensor::data::DataLoaderOptions().batch_size(4).drop_last(true).workers(2));
  std::vector<std::vector<int64_t>> got;
  for (tensor::data::Example<>& batch : *dropping) got.push_back(targets_of(batch));
  EXPECT_EQ(got, (std::vector<std::vector<int64_t>>{{0, 1, 2, 3}, {4, 5, 6, 7}}));
}

TEST(PortData, WithoutStackABatchIsAVectorOfExamples) {
  auto loader = tensor::data::make_data_loader<tensor::data::samplers::SequentialSampler>(
      Squares(5), tensor::data::DataLoaderOptions(2).workers(1));
  std::vector<size_t> sizes;
  std::vector<int64_t> targets;
  for (std::vector<tensor::data::Example<>>& batch : *loader) {
    sizes.push_back(batch.size());
    for (auto& e : batch) targets.push_back(e.target.item<int64_t>());
  }
  EXPECT_EQ(sizes, (std::vector<size_t>{2, 2, 1}));
  EXPECT_EQ(targets, (std::vector<int64_t>{0, 1, 2, 3, 4}));
}

TEST(PortData, RandomSamplerIsTheGlobalGeneratorsPermutation) {
  // libtorch's RandomSampler draws randperm(size) when made and again at every reset(), which the
  // loader calls at each begin(): epoch k's order is the (k + 2)-th randperm after the seed.
  const int64_t n = 11;
  tensor::manual_seed(7);
  std::vector<std::vector<int64_t>> perms;
  for (int k = 0; k < 3; ++k) {
    tensor::Tensor p = tensor::randperm(n);
    perms.emplace_back(p.data_ptr<int64_t>(), p.data_ptr<int64_t>() + n);
  }
  for (size_t workers : {0, 3}) {
    tensor::manual_seed(7);
    auto loader = tensor::data::make_data_loader(Squares(n).map(tensor::data::transforms::Stack<>()),
                                                 tensor::data::DataLoaderOptions().batch_size(3).workers(workers));
    for (int epoch = 0; epoch < 2; ++epoch) {
      std::vector<int64_t> order;
      size_t batches = 0;
      for (auto& batch : *loader) {
        auto t = targets_of(batch);
        order.insert(order.end(), t.begin(), t.end());
        ++batches;
      }
      EXPECT_EQ(batches, 4u);
      EXPECT_EQ(order, perms[epoch + 1]) << "workers " << workers << " epoch " << epoch;
    }
  }
  // The sampler alone: batches of its permutation, then nullopt.
  tensor::manual_seed(3);
  tensor::Tensor p = tensor::randperm(5, tensor::TensorOptions().dtype(tensor::kInt32));
  tensor::manual_seed(3);
  tensor::data::samplers::RandomSampler s(5, tensor::kInt32);
  auto first = s.next(3);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(*first, (std::vector<size_t>{static_cast<size_t>(p[0].item<int64_t>()),
                                         static_cast<size_t>(p[1].item<int64_t>()),
                                         static_cast<size_t>(p[2].item<int64_t>())}));
  EXPECT_EQ(s.next(3)->size(), 2u);
  EXPECT_FALSE(s.next(3).has_value());
  EXPECT_EQ(s.index(), 5u);
}

TEST(PortData, SequentialSampler) {
  tensor::data::samplers::SequentialSampler s(5);
  EXPECT_EQ(*s.next(2), (std::vector<size_t>{0, 1}));
  EXPECT_EQ(*s.next(2), (std::vector<size_t>{2, 3}));
  EXPECT_EQ(*s.next(2), (std::vector<size_t>{4}));
  EXPECT_FALSE(s.next(2).has_value());
  s.reset(3);
  EXPECT_EQ(*s.next(5), (std::vector<size_t>{0, 1, 2}));
}

namespace {
template <typename S>
std::vector<size_t> drain(S& sampler, size_t batch_size, std::vector<size_t>* batch_sizes = nullptr) {
  std::vector<size_t> out;
  while (auto b = sampler.next(batch_size)) {
    if (batch_sizes) batch_sizes->push_back(b->size());
    out.insert(out.end(), b->begin(), b->end());
  }
  return out;
}
}  // namespace

TEST(PortData, DistributedSequentialSamplerPartitions) {
  using tensor::data::samplers::DistributedSequentialSampler;
  // 10 samples over 3 replicas. With duplicates each replica gets ceil(10 / 3) = 4 positions:
  // [0, 4), [4, 8), [8, 12), the last wrapping to samples 0 and 1.
  const std::vector<std::vector<size_t>> dup = {{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 0, 1}};
  for (size_t r = 0; r < 3; ++r) {
    DistributedSequentialSampler s(10, 3, r);
    std::vector<size_t> sizes;
    EXPECT_EQ(drain(s, 3, &sizes), dup[r]) << r;
    EXPECT_EQ(sizes, (std::vector<size_t>{3, 1}));
    s.reset();
    EXPECT_EQ(drain(s, 100), dup[r]) << "after reset, rank " << r;
  }
  // Without duplicates floor(10 / 3) = 3 each; sample 9 is never visited.
  const std::vector<std::vector<size_t>> nodup = {{0, 1, 2}, {3, 4, 5}, {6, 7, 8}};
  for (size_t r = 0; r < 3; ++r) {
    DistributedSequentialSampler s(10, 3, r, /*allow_duplicates=*/false);
    EXPECT_EQ(drain(s, 2), nodup[r]) << r;
  }
  // reset(new_size) recomputes the shares: 4 samples over 3 replicas -> 2 each.
  DistributedSequentialSampler s(10, 3, 2);
  s.reset(4);
  EXPECT_EQ(drain(s, 5), (std::vector<size_t>{0, 1}));  // positions 4 and 5 wrap to 0 and 1
  tensor::testing::expect_error([] { DistributedSequentialSampler bad(10, 3, 3); }, {"rank 3", "3 replicas"});
  tensor::testing::expect_error([] { DistributedSequentialSampler bad(10, 0, 0); }, {"num_replicas"});
}

TEST(PortData, DistributedRandomSamplerPartitions) {
  using tensor::data::samplers::DistributedRandomSampler;
  // libtorch's definition: the list 0..9 followed by the duplicates 0, 1 (12 = 4 * 3 entries),
  // shuffled with std::shuffle and std::mt19937(epoch); replica r takes positions [4r, 4r + 4).
  auto expected_shares = [](size_t epoch) {
    std::vector<size_t> all = iota(0, 10);
    all.push_back(0);
    all.push_back(1);
    std::mt19937 rng(static_cast<std::mt19937::result_type>(epoch));
    std::shuffle(all.begin(), all.end(), rng);
    std::vector<std::vector<size_t>> shares;
    for (size_t r = 0; r < 3; ++r) shares.emplace_back(all.begin() + 4 * r, all.begin() + 4 * r + 4);
    return shares;
  };
  for (size_t epoch : {0, 1, 5}) {
    auto want = expected_shares(epoch);
    std::multiset<size_t> together;
    for (size_t r = 0; r < 3; ++r) {
      DistributedRandomSampler s(10, 3, r);
      s.set_epoch(epoch);
      s.reset();
      EXPECT_EQ(s.epoch(), epoch);
      auto got = drain(s, 3);
      EXPECT_EQ(got, want[r]) << "epoch " << epoch << " rank " << r;
      together.insert(got.begin(), got.end());
    }
    // The shares of one epoch are disjoint and cover every sample, 0 and 1 twice.
    std::vector<size_t> every = iota(0, 10);
    std::multiset<size_t> all(every.begin(), every.end());
    all.insert(0);
    all.insert(1);
    EXPECT_EQ(together, all) << epoch;
  }
  EXPECT_NE(expected_shares(0), expected_shares(1));
  // Without duplicates: 3 each from the first 9 indices; sample 9 never appears (as libtorch).
  std::multiset<size_t> together;
  for (size_t r = 0; r < 3; ++r) {
    DistributedRandomSampler s(10, 3, r, /*allow_duplicates=*/false);
    auto got = drain(s, 2);
    EXPECT_EQ(got.size(), 3u);
    together.insert(got.begin(), got.end());
  }
  std::vector<size_t> nine = iota(0, 9);
  EXPECT_EQ(together, std::multiset<size_t>(nine.begin(), nine.end()));
  // One replica: a permutation of everything.
  DistributedRandomSampler single(7);
  auto got = drain(single, 4);
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, iota(0, 7));
}

TEST(PortData, DistributedSamplerInALoader) {
  // Two replicas of a 7-sample dataset, sequential: rank 1 gets positions [4, 8) -> 4, 5, 6, 0.
  auto loader = tensor::data::make_data_loader(
      Squares(7).map(tensor::data::transforms::Stack<>()),
      tensor::data::samplers::DistributedSequentialSampler(7, /*num_replicas=*/2, /*rank=*/1),
      tensor::data::DataLoaderOptions(3).workers(2));
  std::vector<std::vector<int64_t>> got;
  for (auto& batch : *loader) got.push_back(targets_of(batch));
  EXPECT_EQ(got, (std::vector<std::vector<int64_t>>{{4, 5, 6}, {0}}));
  // The random one reshuffles at each begin() for the epoch set on the loader's sampler.
  auto random = tensor::data::make_data_loader(Squares(7).map(tensor::data::transforms::Stack<>()),
                                               tensor::data::samplers::DistributedRandomSampler(7, 2, 0),
                                               tensor::data::DataLoaderOptions(4));
  std::vector<std::vector<int64_t>> epochs;
  for (size_t e = 0; e < 2; ++e) {
    random->sampler().set_epoch(e);
    std::vector<int64_t> order;
    for (auto& batch : *random) {
      auto t = targets_of(batch);
      order.insert(order.end(), t.begin(), t.end());
    }
    epochs.push_back(order);
    std::vector<size_t> list = iota(0, 7);
    list.push_back(0);
    std::mt19937 rng(static_cast<std::mt19937::result_type>(e));
    std::shuffle(list.begin(), list.end(), rng);
    EXPECT_EQ(order, std::vector<int64_t>(list.begin(), list.begin() + 4)) << e;
  }
}

TEST(PortData, LoaderErrors) {
  // A worker's exception reaches the consumer at its batch.
  struct Failing : tensor::data::datasets::Dataset<Failing> {
    tensor::data::Example<> get(size_t i) override {
      if (i == 5) throw tensor::Error("sample 5 is unreadable");
      return {tensor::zeros({1}), tensor::tensor(static_cast<int64_t>(i))};
    }
    tensor::optional<size_t> size() const override { return 8; }
  };
  for (size_t workers : {0, 2}) {
    auto loader = tensor::data::make_data_loader<tensor::data::samplers::SequentialSampler>(
        Failing().map(tensor::data::transforms::Stack<>()), tensor::data::DataLoaderOptions(2).workers(workers));
    std::vector<int64_t> seen;
    tensor::testing::expect_error(
        [&] {
          for (auto& batch : *loader) {
            auto t = targets_of(batch);
            seen.insert(seen.end(), t.begin(), t.end());
          }
        },
        {"sample 5 is unreadable"});
    EXPECT_EQ(seen, (std::vector<int64_t>{0, 1, 2, 3})) << workers;
  }
  struct Unsized : tensor::data::datasets::Dataset<Unsized> {
    tensor::data::Example<> get(size_t) override { return {}; }
    tensor::optional<size_t> size() const override { return tensor::nullopt; }
  };
  tensor::testing::expect_error([] { tensor::data::make_data_loader(Unsized(), 2); }, {"size()", "nullopt"});
  tensor::testing::expect_error(
      [] { tensor::data::make_data_loader(Squares(3), tensor::data::DataLoaderOptions(2).shuffle(true)); },
      {"shuffle", "sampler"});
  tensor::testing::expect_error([] { tensor::data::make_data_loader(Squares(3), 0); }, {"batch_size", "at least 1"});
}

TEST(PortData, MnistStyleLibtensorDatasetsMapToo) {
  // libtensor's virtual data::Dataset classes (TensorDataset, MNIST) take part in the same pipeline.
  tensor::Tensor x = tensor::arange(12, tensor::TensorOptions().dtype(tensor::kFloat32)).reshape({6, 1, 1, 2});
  tensor::Tensor y = tensor::arange(6);
  auto ds = tensor::data::TensorDataset(x, y)
                .map(tensor::data::transforms::Normalize<>(1.0, 2.0))
                .map(tensor::data::transforms::Stack<>());
  auto loader = tensor::data::make_data_loader<tensor::data::samplers::SequentialSampler>(std::move(ds), 4);
  std::vector<std::vector<int64_t>> got;
  for (auto& batch : *loader) {
    got.push_back(targets_of(batch));
    if (got.size() == 1) {
      EXPECT_EQ(batch.data.sizes(), tensor::IntArrayRef({4, 1, 1, 2}));
      EXPECT_FLOAT_EQ(batch.data[3][0][0][1].item<float>(), (7 - 1) / 2.0f);
    }
  }
  EXPECT_EQ(got, (std::vector<std::vector<int64_t>>{{0, 1, 2, 3}, {4, 5}}));
}

TEST(PortData, LibtorchTensorDatasetHasNoTargets) {
  // datasets::TensorDataset (libtorch's): rows of one tensor, stacked by Stack<TensorExample>.
  tensor::data::datasets::TensorDataset rows(tensor::arange(8).reshape({4, 2}));
  EXPECT_EQ(rows.size().value(), 4u);
  auto loader = tensor::data::make_data_loader<tensor::data::samplers::SequentialSampler>(
      std::move(rows).map(tensor::data::transforms::Stack<tensor::data::TensorExample>()), 3);
  std::vector<int64_t> firsts;
  for (auto& batch : *loader)
    for (int64_t k = 0; k < batch.data.size(0); ++k) firsts.push_back(batch.data[k][0].item<int64_t>());
  EXPECT_EQ(firsts, (std::vector<int64_t>{0, 2, 4, 6}));
}

TEST(PortData, TrainingLoopOnAMappedDatasetLearns) {
  // y = 3 * mean(channel 0) - 2 * mean(channel 1) + 1 over random 2x2x2 inputs; a linear model on
  // the normalized, stacked batches must fit it.
  struct Regression : tensor::data::datasets::Dataset<Regression> {
    explicit Regression(int64_t n) {
      x = tensor::rand({n, 2, 2, 2}) * 4 + 1;
      y = 3 * x.select(1, 0).mean({1, 2}) - 2 * x.select(1, 1).mean({1, 2}) + 1;
    }
    tensor::data::Example<> get(size_t i) override {
      return {x[static_cast<int64_t>(i)], y[static_cast<int64_t>(i)].unsqueeze(0)};
    }
    tensor::optional<size_t> size() const override { return static_cast<size_t>(x.size(0)); }
    tensor::Tensor x, y;
  };
  tensor::manual_seed(0);
  auto dataset = Regression(256)
                     .map(tensor::data::transforms::Normalize<>({3.0, 3.0}, {1.2, 1.2}))
                     .map(tensor::data::transforms::Stack<>());
  const size_t n = dataset.size().value();
  auto loader = tensor::data::make_data_loader(std::move(dataset),
                                               tensor::data::DataLoaderOptions().batch_size(32).workers(2));
  tensor::nn::Linear model(8, 1);
  tensor::optim::SGD optimizer(model->parameters(), tensor::optim::SGDOptions(0.05).momentum(0.9));
  std::vector<double> epoch_loss;
  for (int epoch = 0; epoch < 30; ++epoch) {
    double total = 0;
    size_t seen = 0;
    for (auto& batch : *loader) {
      optimizer.zero_grad();
      tensor::Tensor pred = model->forward(batch.data.flatten(1));
      tensor::Tensor loss = tensor::nn::functional::mse_loss(pred, batch.target);
      loss.backward();
      optimizer.step();
      total += loss.item<double>() * static_cast<double>(batch.data.size(0));
      seen += static_cast<size_t>(batch.data.size(0));
    }
    EXPECT_EQ(seen, n);
    epoch_loss.push_back(total / static_cast<double>(seen));
  }
  // The targets' variance is about 9 * var(U(1,5)) / 4 + 4 * var / 4 ~ 4.3: an untrained model's
  // loss is of that order; the fit must bring it down at least a hundredfold.
  EXPECT_GT(epoch_loss.front(), 0.5);
  EXPECT_LT(epoch_loss.back(), epoch_loss.front() / 100) << epoch_loss.front() << " -> " << epoch_loss.back();
}
