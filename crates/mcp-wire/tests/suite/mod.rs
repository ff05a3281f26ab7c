mod decode;
mod echo;
mod lane;
mod served;
mod transport;
