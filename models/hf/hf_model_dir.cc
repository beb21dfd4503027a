#include "models/hf/hf_model_dir.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "engine/core/error.h"

namespace tessera::hf {

namespace fs = std::filesystem;
using nlohmann::json;

std::optional<std::string> read_text_file(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  if (!fs::is_regular_file(path, ec)) throw Error(path + ": not a regular file");
  const auto size = fs::file_size(path, ec);
  if (ec) throw Error(path + ": cannot stat: " + ec.message());
  if (size > kMaxJsonFileBytes) throw Error(path + ": " + std::to_string(size) + " bytes exceeds the limit of " + std::to_string(kMaxJsonFileBytes));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

json parse_json_text(std::string_view text, const std::string& source) {
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    throw Error(source + ": not valid JSON: " + e.what());
  }
}

namespace {

std::optional<json> read_json_object(const std::string& path) {
  const auto text = read_text_file(path);
  if (!text) return std::nullopt;
  json value = parse_json_text(*text, path);
  if (!value.is_object()) throw Error(path + ": top level is not a JSON object");
  return value;
}

// Shard names come from a file: keep them inside the model directory.
void check_shard_name(const std::string& index_path, const std::string& name) {
  if (name.empty() || name.find('/') != std::string::npos || name.find('\\') != std::string::npos || name == "." || name == "..") {
    throw Error(index_path + ": shard name '" + name + "' is not a plain file name");
  }
}

}  // namespace

ModelDir ModelDir::open(const std::string& dir) {
  ModelDir model;
  model.path_ = dir;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw Error(dir + ": not a directory");
  auto config = read_json_object(dir + "/config.json");
  if (!config) throw Error(dir + ": no config.json");
  model.config_ = std::move(*config);
  model.generation_config_ = read_json_object(dir + "/generation_config.json");
  model.tokenizer_config_ = read_json_object(dir + "/tokenizer_config.json");
  model.tokenizer_json_ = read_text_file(dir + "/tokenizer.json");
  if (fs::exists(dir + "/model.safetensors.index.json")) {
    model.load_sharded(dir + "/model.safetensors.index.json");
  } else if (fs::exists(dir + "/model.safetensors")) {
    model.load_single(dir + "/model.safetensors");
  } else {
    throw Error(dir + ": no model.safetensors or model.safetensors.index.json");
  }
  return model;
}

void ModelDir::load_single(const std::string& file) {
  shards_.push_back(std::make_unique<safetensors::File>(safetensors::File::open(file)));
}

void ModelDir::load_sharded(const std::string& index_file) {
  const auto index = read_json_object(index_file);
  const auto map_it = index->find("weight_map");
  if (map_it == index->end() || !map_it->is_object()) throw Error(index_file + ": missing object 'weight_map'");
  std::set<std::string> shard_names;
  for (const auto& [tensor, shard] : map_it->items()) {
    if (!shard.is_string()) throw Error(index_file + ": weight_map entry '" + tensor + "' is not a string");
    check_shard_name(index_file, shard.get<std::string>());
    shard_names.insert(shard.get<std::string>());
  }
  for (const std::string& name : shard_names) load_single(path_ + "/" + name);
  for (const auto& [tensor, shard] : map_it->items()) {
    const auto ref = find_weight(tensor);
    if (!ref || ref->file->name() != path_ + "/" + shard.get<std::string>()) {
      throw Error(index_file + ": tensor '" + tensor + "' is not in its shard " + shard.get<std::string>());
    }
  }
}

std::optional<WeightRef> ModelDir::find_weight(std::string_view name) const {
  for (const auto& shard : shards_) {
    if (const safetensors::TensorInfo* t = shard->find_tensor(name)) return WeightRef{shard.get(), t};
  }
  return std::nullopt;
}

size_t ModelDir::weight_count() const {
  size_t n = 0;
  for (const auto& shard : shards_) n += shard->tensors().size();
  return n;
}

}  // namespace tessera::hf
