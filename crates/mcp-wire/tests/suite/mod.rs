mod decode;
mod echo;
mod transport;
