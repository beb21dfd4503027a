#include "server/grpc/reflection_service.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>

namespace tessera {

using grpc::reflection::v1::ServerReflectionRequest;
using grpc::reflection::v1::ServerReflectionResponse;
namespace pb = google::protobuf;

namespace {

// `file` (always: it was asked for) and, depth first, the files it imports
// that this stream has not had yet. Descriptor imports form no cycles.
void add_file(const pb::FileDescriptor* file, grpc::reflection::v1::FileDescriptorResponse& out, std::set<std::string>& sent) {
  sent.insert(file->name());
  pb::FileDescriptorProto proto;
  file->CopyTo(&proto);
  out.add_file_descriptor_proto(proto.SerializeAsString());
  for (int i = 0; i < file->dependency_count(); ++i) {
    if (!sent.contains(file->dependency(i)->name())) add_file(file->dependency(i), out, sent);
  }
}

grpc::Status not_found(const std::string& what) { return grpc::Status(grpc::StatusCode::NOT_FOUND, what + " not found"); }

}  // namespace

grpc::Status ReflectionService::answer(const ServerReflectionRequest& request, ServerReflectionResponse& response,
                                       std::set<std::string>& sent) const {
  const pb::DescriptorPool* pool = pb::DescriptorPool::generated_pool();
  const pb::FileDescriptor* file = nullptr;
  switch (request.message_request_case()) {
    case ServerReflectionRequest::kListServices:
      for (const std::string& name : services_) response.mutable_list_services_response()->add_service()->set_name(name);
      return grpc::Status::OK;
    case ServerReflectionRequest::kFileByFilename:
      file = pool->FindFileByName(request.file_by_filename());
      if (file == nullptr) return not_found("file " + request.file_by_filename());
      break;
    case ServerReflectionRequest::kFileContainingSymbol:
      file = pool->FindFileContainingSymbol(request.file_containing_symbol());
      if (file == nullptr) return not_found("symbol " + request.file_containing_symbol());
      break;
    case ServerReflectionRequest::kFileContainingExtension: {
      const auto& ext = request.file_containing_extension();
      const pb::Descriptor* type = pool->FindMessageTypeByName(ext.containing_type());
      if (type == nullptr) return not_found("type " + ext.containing_type());
      const pb::FieldDescriptor* field = pool->FindExtensionByNumber(type, ext.extension_number());
      if (field == nullptr) return not_found("extension " + std::to_string(ext.extension_number()) + " of " + ext.containing_type());
      file = field->file();
      break;
    }
    case ServerReflectionRequest::kAllExtensionNumbersOfType: {
      const pb::Descriptor* type = pool->FindMessageTypeByName(request.all_extension_numbers_of_type());
      if (type == nullptr) return not_found("type " + request.all_extension_numbers_of_type());
      std::vector<const pb::FieldDescriptor*> extensions;
      pool->FindAllExtensions(type, &extensions);
      auto* out = response.mutable_all_extension_numbers_response();
      out->set_base_type_name(type->full_name());
      for (const pb::FieldDescriptor* e : extensions) out->add_extension_number(e->number());
      return grpc::Status::OK;
    }
    default:
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "the request names no reflection query");
  }
  add_file(file, *response.mutable_file_descriptor_response(), sent);
  return grpc::Status::OK;
}

grpc::Status ReflectionService::ServerReflectionInfo(
    grpc::ServerContext* context, grpc::ServerReaderWriter<ServerReflectionResponse, ServerReflectionRequest>* stream) {
  std::set<std::string> sent;
  ServerReflectionRequest request;
  while (!context->IsCancelled() && stream->Read(&request)) {
    ServerReflectionResponse response;
    response.set_valid_host(request.host());
    *response.mutable_original_request() = request;
    const grpc::Status status = answer(request, response, sent);
    if (!status.ok()) {
      response.clear_message_response();
      response.mutable_error_response()->set_error_code(int(status.error_code()));
      response.mutable_error_response()->set_error_message(status.error_message());
    }
    if (!stream->Write(response)) break;
  }
  return grpc::Status::OK;
}

}  // namespace tessera
