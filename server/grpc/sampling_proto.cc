#include "server/grpc/sampling_proto.h"

#include <string>

#include "base/check.h"

namespace kvd::server {
namespace {

using google::protobuf::FieldDescriptor;

const FieldDescriptor& ProtoField(const engine::SamplingField& field) {
  const FieldDescriptor* proto_field =
      v1::SamplingParams::descriptor()->FindFieldByName(std::string(field.name));
  KVD_CHECK(proto_field != nullptr && proto_field->has_presence());
  return *proto_field;
}

}  // namespace

std::vector<std::pair<const engine::SamplingField*, double>> ReadSamplingProto(
    const v1::SamplingParams& sampling) {
  const google::protobuf::Reflection& reflection = *sampling.GetReflection();
  std::vector<std::pair<const engine::SamplingField*, double>> given;
  for (const engine::SamplingField& field : engine::kSamplingFields) {
    const FieldDescriptor& proto_field = ProtoField(field);
    if (!reflection.HasField(sampling, &proto_field)) continue;
    switch (proto_field.cpp_type()) {
      case FieldDescriptor::CPPTYPE_FLOAT:
        given.emplace_back(&field, reflection.GetFloat(sampling, &proto_field));
        break;
      case FieldDescriptor::CPPTYPE_DOUBLE:
        given.emplace_back(&field, reflection.GetDouble(sampling, &proto_field));
        break;
      case FieldDescriptor::CPPTYPE_INT32:
        given.emplace_back(&field, reflection.GetInt32(sampling, &proto_field));
        break;
      default:
        KVD_CHECK(false && "a sampling field is a float, a double or an int32");
    }
  }
  return given;
}

void WriteSamplingProto(const engine::SamplingField& field, double value,
                        v1::SamplingParams& sampling) {
  const google::protobuf::Reflection& reflection = *sampling.GetReflection();
  const FieldDescriptor& proto_field = ProtoField(field);
  switch (proto_field.cpp_type()) {
    case FieldDescriptor::CPPTYPE_FLOAT:
      return reflection.SetFloat(&sampling, &proto_field, static_cast<float>(value));
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return reflection.SetDouble(&sampling, &proto_field, value);
    case FieldDescriptor::CPPTYPE_INT32:
      return reflection.SetInt32(&sampling, &proto_field, static_cast<int32_t>(value));
    default:
      KVD_CHECK(false && "a sampling field is a float, a double or an int32");
  }
}

}  // namespace kvd::server
