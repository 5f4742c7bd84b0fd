{datalith/datom datalith.readers/read-datom}
