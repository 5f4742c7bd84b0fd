{datalith/datom datalith.readers/read-datom
 datalith/bytes datalith.readers/read-bytes
 datalith/float datalith.readers/read-float
 datalith/uri datalith.readers/read-uri}
