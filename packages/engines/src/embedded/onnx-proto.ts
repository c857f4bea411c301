// The subset of onnx.proto (github.com/onnx/onnx, onnx/onnx.proto; field numbers from there)
// that the embedded export writes, as protobufjs reflection JSON, plus the ModelProto encoder.
// Field names are camelCase here; only the numbers reach the wire.
import protobuf from 'protobufjs';

const field = (id: number, type: string, rule?: 'repeated') =>
  rule ? { id, type, rule } : { id, type };

const ONNX_SUBSET = {
  nested: {
    onnx: {
      nested: {
        ModelProto: {
          fields: {
            irVersion: field(1, 'int64'),
            producerName: field(2, 'string'),
            producerVersion: field(3, 'string'),
            docString: field(6, 'string'),
            graph: field(7, 'GraphProto'),
            opsetImport: field(8, 'OperatorSetIdProto', 'repeated'),
          },
        },
        OperatorSetIdProto: { fields: { domain: field(1, 'string'), version: field(2, 'int64') } },
        GraphProto: {
          fields: {
            node: field(1, 'NodeProto', 'repeated'),
            name: field(2, 'string'),
            initializer: field(5, 'TensorProto', 'repeated'),
            docString: field(10, 'string'),
            input: field(11, 'ValueInfoProto', 'repeated'),
            output: field(12, 'ValueInfoProto', 'repeated'),
          },
        },
        NodeProto: {
          fields: {
            input: field(1, 'string', 'repeated'),
            output: field(2, 'string', 'repeated'),
            name: field(3, 'string'),
            opType: field(4, 'string'),
            attribute: field(5, 'AttributeProto', 'repeated'),
            domain: field(7, 'string'),
          },
        },
        AttributeProto: {
          fields: {
            name: field(1, 'string'),
            f: field(2, 'float'),
            i: field(3, 'int64'),
            t: field(5, 'TensorProto'),
            ints: field(8, 'int64', 'repeated'),
            type: field(20, 'int32'), // AttributeType: FLOAT 1, INT 2, TENSOR 4, INTS 7
          },
        },
        TensorProto: {
          fields: {
            dims: field(1, 'int64', 'repeated'),
            dataType: field(2, 'int32'), // DataType: FLOAT 1, INT64 7, BOOL 9
            name: field(8, 'string'),
            rawData: field(9, 'bytes'), // little-endian values
          },
        },
        ValueInfoProto: { fields: { name: field(1, 'string'), type: field(2, 'TypeProto') } },
        TypeProto: { fields: { tensorType: field(1, 'TypeProtoTensor') } },
        TypeProtoTensor: {
          fields: { elemType: field(1, 'int32'), shape: field(2, 'TensorShapeProto') },
        },
        TensorShapeProto: { fields: { dim: field(1, 'Dimension', 'repeated') } },
        Dimension: { fields: { dimValue: field(1, 'int64'), dimParam: field(2, 'string') } },
      },
    },
  },
};

export const DataType = { FLOAT: 1, INT64: 7, BOOL: 9 } as const;
export const AttributeType = { FLOAT: 1, INT: 2, TENSOR: 4, INTS: 7 } as const;

export interface TensorJson {
  name: string;
  dims: number[];
  dataType: number;
  rawData: Uint8Array;
}

export interface AttributeJson {
  name: string;
  type: number;
  f?: number;
  i?: number;
  ints?: number[];
  t?: TensorJson;
}

export interface NodeJson {
  name: string;
  opType: string;
  input: string[];
  output: string[];
  attribute: AttributeJson[];
}

/** A dimension is a fixed size or a symbolic name such as 'batch'. */
export type Dim = number | string;

export interface ValueInfoJson {
  name: string;
  type: {
    tensorType: {
      elemType: number;
      shape: { dim: Array<{ dimValue?: number; dimParam?: string }> };
    };
  };
}

export function valueInfo(name: string, elemType: number, dims: readonly Dim[]): ValueInfoJson {
  const dim = dims.map((d) => (typeof d === 'number' ? { dimValue: d } : { dimParam: d }));
  return { name, type: { tensorType: { elemType, shape: { dim } } } };
}

export interface ModelJson {
  graph: {
    name: string;
    node: NodeJson[];
    initializer: TensorJson[];
    input: ValueInfoJson[];
    output: ValueInfoJson[];
    docString?: string;
  };
  opsetVersion: number;
  docString?: string;
}

const root = protobuf.Root.fromJSON(ONNX_SUBSET);
const ModelProto = root.lookupType('onnx.ModelProto');

/** IR version 8 pairs with opset 17 (the ONNX project's IR-version / opset table). */
export function encodeModel(model: ModelJson, producerVersion: string): Uint8Array {
  const message = ModelProto.fromObject({
    irVersion: 8,
    producerName: 'anneal-embedded',
    producerVersion,
    docString: model.docString ?? '',
    graph: model.graph,
    opsetImport: [{ domain: '', version: model.opsetVersion }],
  });
  return ModelProto.encode(message).finish();
}
